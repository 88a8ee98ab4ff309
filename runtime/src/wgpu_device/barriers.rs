//! Which dispatches of a launch list wait behind a barrier, as wgpu tracks the buffers of
//! a compute pass.
//!
//! wgpu records a launch list as one compute pass ([`super::pipeline`]) and tracks each
//! buffer's use through it: before a dispatch that binds a buffer an earlier dispatch of
//! the pass wrote, or binds one read-write that an earlier dispatch used, it records a
//! pipeline barrier, and the dispatch starts once everything before it has finished. A
//! buffer's first use in the pass, and reads after reads, cost none (wgpu moves the
//! transitions from the pass's earlier state in front of it). The memory plan reuses
//! buffers with this in mind (`weft_model::plan::Reuse::Waiting`); this says what came
//! of it, launch by launch.

use std::collections::HashMap;

use super::WgpuDevice;
use crate::device::{DeviceError, KernelArg, Launch};

impl WgpuDevice {
    /// Per launch of `launches` run as one pass: whether a barrier waits before it.
    /// With a pass per launch ([`super::WgpuOptions::pass_per_launch`]) every launch but
    /// the first waits, at its pass's start.
    pub(super) fn barriers_before(&self, launches: &[Launch]) -> Result<Vec<bool>, DeviceError> {
        if self.options.pass_per_launch {
            return Ok((0..launches.len()).map(|i| i > 0).collect());
        }
        // Per buffer the pass used so far: whether its last use wrote it.
        let mut wrote: HashMap<usize, bool> = HashMap::new();
        let mut waits = Vec::with_capacity(launches.len());
        for l in launches {
            let kernel = self.compiled(l.kernel)?;
            let Some(pipeline) = self.pipelines.get(kernel.pipeline) else {
                return Err(DeviceError::BadHandle {
                    what: "pipeline",
                    index: kernel.pipeline,
                });
            };
            // A buffer bound twice is read only if every binding reads it only.
            let mut reads_only: HashMap<usize, bool> = HashMap::new();
            for b in &pipeline.wgsl.entry().bindings {
                if let Some(KernelArg::Buffer(id)) = l.args.get(b.param) {
                    *reads_only.entry(id.0).or_insert(true) &= b.read_only;
                }
            }
            waits.push(
                reads_only.iter().any(|(buffer, &read)| {
                    wrote.get(buffer).is_some_and(|&written| written || !read)
                }),
            );
            for (buffer, read) in reads_only {
                wrote.insert(buffer, !read);
            }
        }
        Ok(waits)
    }
}
