// Validates WGSL files with Tint, Chrome's WGSL compiler, through Dawn for Node.js (the
// npm package `webgpu`) on its null backend: no GPU is needed. Each file is compiled as
// a shader module and built into one compute pipeline per entry point (a module `weft
// emit` prints holds every kernel of a function); Tint's errors are printed.
//
// usage: node validate.mjs FILE.wgsl...   (exit 0: all accepted; 1: some rejected)
// Prints one line per file: `ok FILE`, `skip FILE: reason` or `error FILE: message`.
import { readFileSync } from 'node:fs';
import { create, globals } from 'webgpu';

Object.assign(globalThis, globals);
const gpu = create(['backend=null']);
const adapter = await gpu.requestAdapter();
if (!adapter) {
  console.error('Dawn: no null-backend adapter');
  process.exit(2);
}
// f16 and subgroups where the adapter has them; every limit the adapter allows, so that
// what is checked is the language, not WebGPU's default limits (weft checks those itself).
const features = ['shader-f16', 'subgroups'].filter((f) => adapter.features.has(f));
const requiredLimits = {};
for (const key of ['maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX', 'maxComputeWorkgroupSizeY', 'maxComputeWorkgroupSizeZ',
  'maxStorageBuffersPerShaderStage', 'maxStorageBufferBindingSize']) {
  requiredLimits[key] = adapter.limits[key];
}
const device = await adapter.requestDevice({ requiredFeatures: features, requiredLimits });

let failed = 0;
for (const file of process.argv.slice(2)) {
  const source = readFileSync(file, 'utf8');
  if (/^\s*enable\s+wgpu_cooperative_matrix\s*;/m.test(source)) {
    // wgpu's own extension: no browser has it, so Tint does not know it.
    console.log(`skip ${file}: wgpu_cooperative_matrix is a wgpu extension`);
    continue;
  }
  // weft writes subgroup functions without `enable subgroups;`, which naga (wgpu 30)
  // refuses (gfx-rs/wgpu#8202) and WGSL requires: added here for Tint.
  const code = /\bsubgroup[A-Z]\w*\(/.test(source) ? `enable subgroups;\n${source}` : source;
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code });
  const info = await module.getCompilationInfo();
  const errors = info.messages
    .filter((m) => m.type === 'error')
    .map((m) => `${m.lineNum}:${m.linePos}: ${m.message}`);
  if (errors.length === 0) {
    const entries = [...code.matchAll(/@compute[^\n]*\n\s*fn\s+([A-Za-z_][A-Za-z0-9_]*)/g)]
      .map((m) => m[1]);
    if (entries.length === 0) errors.push('no @compute entry point');
    for (const entryPoint of entries) {
      try {
        await device.createComputePipelineAsync({
          layout: 'auto',
          compute: { module, entryPoint },
        });
      } catch (e) {
        errors.push(`pipeline ${entryPoint}: ${e.message}`);
      }
    }
  }
  const scoped = await device.popErrorScope();
  if (scoped && errors.length === 0) errors.push(scoped.message);
  if (errors.length > 0) {
    failed += 1;
    console.log(`error ${file}: ${errors.join(' | ').replace(/\n/g, ' ')}`);
  } else {
    console.log(`ok ${file}`);
  }
}
device.destroy();
process.exit(failed > 0 ? 1 : 0);
