//! Pipelines, bind groups, encoding, and timing of launches.

use std::time::{Duration, Instant};

use weft_codegen_common::Emitted;
use weft_ir::data::Scalar;
use wgpu::util::DeviceExt;

use crate::device::{DeviceError, KernelArg, KernelId, check_launch};

use super::{BUFFER_ALIGN, MAX_QUERIES, Pipeline, Prepared, WgpuDevice, WgpuError, round_up};

impl WgpuDevice {
    /// Builds the pipeline of `wgsl`, or finds it in the cache.
    pub(super) fn pipeline_for(
        &mut self,
        wgsl: Emitted,
        name: &str,
        unchecked: bool,
    ) -> Result<usize, WgpuError> {
        if let Some(&i) = self.by_source.get(&(wgsl.source.clone(), unchecked)) {
            return Ok(i);
        }
        let built = self.build_pipeline(&wgsl, name, unchecked)?;
        Ok(self.insert_pipeline(wgsl, unchecked, built))
    }

    /// Caches a built pipeline; its index.
    pub(super) fn insert_pipeline(
        &mut self,
        wgsl: Emitted,
        unchecked: bool,
        (layout, pipeline): (wgpu::BindGroupLayout, wgpu::ComputePipeline),
    ) -> usize {
        let key = (wgsl.source.clone(), unchecked);
        if let Some(&i) = self.by_source.get(&key) {
            return i;
        }
        self.by_source.insert(key, self.pipelines.len());
        self.pipelines.push(Pipeline {
            wgsl,
            layout,
            pipeline,
        });
        self.pipelines.len() - 1
    }

    /// Compiles `wgsl` into a bind group layout and a compute pipeline, without naga's
    /// runtime checks when `unchecked`. Takes `&self` only, so several threads may build
    /// pipelines at once (wgpu's error scopes are per thread).
    pub(super) fn build_pipeline(
        &self,
        wgsl: &Emitted,
        name: &str,
        unchecked: bool,
    ) -> Result<(wgpu::BindGroupLayout, wgpu::ComputePipeline), WgpuError> {
        let op = format!("compiling kernel `{name}`");
        self.scoped(&op, || {
            let storage = |read_only| wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            };
            let mut entries: Vec<wgpu::BindGroupLayoutEntry> = wgsl
                .entry()
                .bindings
                .iter()
                .map(|b| wgpu::BindGroupLayoutEntry {
                    binding: b.binding,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: storage(b.read_only),
                    count: None,
                })
                .collect();
            if let Some(u) = &wgsl.entry().uniform {
                entries.push(wgpu::BindGroupLayoutEntry {
                    binding: u.binding,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                });
            }
            let layout = self
                .device
                .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: Some(name),
                    entries: &entries,
                });
            let pipeline_layout =
                self.device
                    .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                        label: Some(name),
                        bind_group_layouts: &[Some(&layout)],
                        immediate_size: 0,
                    });
            let desc = wgpu::ShaderModuleDescriptor {
                label: Some(name),
                source: wgpu::ShaderSource::Wgsl(wgsl.source.as_str().into()),
            };
            let module = if unchecked {
                // SAFETY: the bounds prover showed every access of the kernel this WGSL was
                // emitted from in bounds, every integer divisor neither 0 nor -1, and its
                // loops are counted `for` loops (`ShaderChecks::Proven`); or the user forced
                // it for a benchmark (`ShaderChecks::Unchecked`).
                unsafe {
                    self.device
                        .create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked())
                }
            } else {
                self.device.create_shader_module(desc)
            };
            let pipeline = self
                .device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(name),
                    layout: Some(&pipeline_layout),
                    module: &module,
                    entry_point: Some(&wgsl.entry().name),
                    compilation_options: Default::default(),
                    cache: None,
                });
            (layout, pipeline)
        })
    }

    /// Checks a launch and builds its bind group (storage buffers and the uniform block of
    /// scalars).
    pub(super) fn prepare(
        &self,
        kernel: KernelId,
        args: &[KernelArg],
    ) -> Result<Prepared, DeviceError> {
        let ck = self.compiled(kernel)?;
        check_launch(&ck.kernel, args, |b| {
            let buf = self.buffers.get(b.0, "buffer")?;
            Ok((buf.dtype, buf.len))
        })?;
        let p = self
            .pipelines
            .get(ck.pipeline)
            .ok_or(DeviceError::BadHandle {
                what: "pipeline",
                index: ck.pipeline,
            })?;
        let name = &ck.kernel.name;
        let binding_error = |binding, param, what| WgpuError::Binding {
            kernel: name.clone(),
            binding,
            param,
            what,
        };
        let mut entries: Vec<wgpu::BindGroupEntry> = Vec::new();
        for b in &p.wgsl.entry().bindings {
            match args.get(b.param) {
                Some(KernelArg::Buffer(id)) => entries.push(wgpu::BindGroupEntry {
                    binding: b.binding,
                    resource: self.buffers.get(id.0, "buffer")?.buffer.as_entire_binding(),
                }),
                Some(KernelArg::Scalar(_)) => {
                    return Err(binding_error(b.binding, b.param, "a scalar").into());
                }
                None => return Err(binding_error(b.binding, b.param, "out of range").into()),
            }
        }
        let uniform = match &p.wgsl.entry().uniform {
            Some(u) => {
                let mut bytes = vec![0u8; round_up(u.size.max(1), BUFFER_ALIGN) as usize];
                for &(param, offset) in &u.fields {
                    let Some(KernelArg::Scalar(s)) = args.get(param) else {
                        return Err(binding_error(u.binding, param, "not a scalar").into());
                    };
                    let v = scalar_bytes(*s);
                    let at = offset as usize;
                    match bytes.get_mut(at..at + 4) {
                        Some(dst) => dst.copy_from_slice(&v),
                        None => {
                            return Err(binding_error(u.binding, param, "past the uniform").into());
                        }
                    }
                }
                let buffer = self
                    .device
                    .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("weft scalars"),
                        contents: &bytes,
                        usage: wgpu::BufferUsages::UNIFORM,
                    });
                Some((u.binding, buffer))
            }
            None => None,
        };
        if let Some((binding, buffer)) = &uniform {
            entries.push(wgpu::BindGroupEntry {
                binding: *binding,
                resource: buffer.as_entire_binding(),
            });
        }
        let bind_group = self.scoped(&format!("binding the arguments of `{name}`"), || {
            self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(name),
                layout: &p.layout,
                entries: &entries,
            })
        })?;
        Ok(Prepared {
            pipeline: ck.pipeline,
            bind_group,
            grid: ck.kernel.grid,
        })
    }

    /// Records `launches` as dispatches of one compute pass (or, with
    /// [`super::WgpuOptions::pass_per_launch`], one pass each, the first pass writing the
    /// beginning timestamp and the last the end one). wgpu inserts the barriers that make
    /// one dispatch's storage writes visible to the next.
    pub(super) fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        launches: &[Prepared],
        timestamps: Option<wgpu::ComputePassTimestampWrites<'_>>,
    ) {
        let groups: Vec<&[Prepared]> = if self.options.pass_per_launch && launches.len() > 1 {
            launches.chunks(1).collect()
        } else {
            vec![launches]
        };
        let last = groups.len() - 1;
        for (i, group) in groups.into_iter().enumerate() {
            // A pass between the first and the last writes no timestamp (wgpu refuses a
            // write with neither index).
            let timestamp_writes = timestamps
                .as_ref()
                .map(|t| wgpu::ComputePassTimestampWrites {
                    query_set: t.query_set,
                    beginning_of_pass_write_index: t
                        .beginning_of_pass_write_index
                        .filter(|_| i == 0),
                    end_of_pass_write_index: t.end_of_pass_write_index.filter(|_| i == last),
                })
                .filter(|t| {
                    t.beginning_of_pass_write_index.is_some() || t.end_of_pass_write_index.is_some()
                });
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("weft"),
                timestamp_writes,
            });
            for l in group {
                if let Some(p) = self.pipelines.get(l.pipeline) {
                    pass.set_pipeline(&p.pipeline);
                    pass.set_bind_group(0, &l.bind_group, &[]);
                    pass.dispatch_workgroups(l.grid[0], l.grid[1], l.grid[2]);
                }
            }
        }
    }

    /// Submits `reps` repetitions of `launches` in one command buffer and waits.
    pub(super) fn submit(
        &self,
        launches: &[Prepared],
        reps: usize,
        op: &str,
    ) -> Result<(), WgpuError> {
        self.scoped(op, || {
            let mut encoder = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
            for _ in 0..reps {
                self.encode(&mut encoder, launches, None);
            }
            self.queue.submit([encoder.finish()]);
        })?;
        self.wait(op)
    }

    /// Times each of `iters` runs with timestamps at the start and end of its pass.
    pub(super) fn time_with_queries(
        &self,
        launches: &[Prepared],
        iters: usize,
    ) -> Result<Vec<Duration>, WgpuError> {
        let period = self.queue.get_timestamp_period() as f64;
        let mut all = Vec::with_capacity(iters);
        let per_set = (MAX_QUERIES / 2) as usize;
        let mut left = iters;
        while left > 0 {
            let n = left.min(per_set);
            left -= n;
            let count = 2 * n as u32;
            let size = count as u64 * wgpu::QUERY_SIZE as u64;
            let resolve = self.scoped("timing with timestamp queries", || {
                let set = self.device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("weft timing"),
                    ty: wgpu::QueryType::Timestamp,
                    count,
                });
                let resolve = self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("weft timestamps"),
                    size,
                    usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                });
                let mut encoder = self
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
                for i in 0..n as u32 {
                    let writes = wgpu::ComputePassTimestampWrites {
                        query_set: &set,
                        beginning_of_pass_write_index: Some(2 * i),
                        end_of_pass_write_index: Some(2 * i + 1),
                    };
                    self.encode(&mut encoder, launches, Some(writes));
                }
                encoder.resolve_query_set(&set, 0..count, &resolve, 0);
                self.queue.submit([encoder.finish()]);
                resolve
            })?;
            let bytes = self.read_back(&resolve, size, "reading timestamps")?;
            let ticks: Vec<u64> = bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect();
            for pair in ticks.chunks_exact(2) {
                let ns = pair[1].saturating_sub(pair[0]) as f64 * period;
                all.push(Duration::from_secs_f64(ns / 1e9));
            }
        }
        Ok(all)
    }

    /// Times each run by the wall clock around enough repetitions in one submit that a
    /// sample lasts about a millisecond, so submit and wait costs are spread thin.
    pub(super) fn time_with_clock(
        &self,
        launches: &[Prepared],
        iters: usize,
    ) -> Result<Vec<Duration>, WgpuError> {
        let start = Instant::now();
        self.submit(launches, 1, "calibrating the timer")?;
        let one = start.elapsed().as_secs_f64().max(1e-6);
        let reps = ((1e-3 / one).ceil() as usize).clamp(1, 1000);
        let mut all = Vec::with_capacity(iters);
        for _ in 0..iters {
            let start = Instant::now();
            self.submit(launches, reps, "timed runs")?;
            all.push(start.elapsed() / reps as u32);
        }
        Ok(all)
    }
}

/// A scalar as the 4 bytes of its uniform field (f16 is passed as f32).
fn scalar_bytes(s: Scalar) -> [u8; 4] {
    match s {
        Scalar::F32(v) => v.to_le_bytes(),
        Scalar::F16(v) => v.to_f32().to_le_bytes(),
        Scalar::I32(v) => v.to_le_bytes(),
        Scalar::U32(v) => v.to_le_bytes(),
    }
}
