//! Kernels beside the chain: a kernel that writes no buffer (weft's L2 prefetching
//! kernels, `weft_model::beside`) changes nothing any other kernel reads, so nothing
//! needs to wait for it. It runs on a second stream, forked off the device's stream
//! where it is enqueued (it starts once everything enqueued before it has finished) and
//! joined back before the next synchronization or at the end of a launch list, so that
//! a captured CUDA graph holds it as a branch and the kernels after it in the list start
//! without waiting for it.

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream, DriverError};
use weft_ir::kernel::{Kernel, KernelParam};

/// The second stream and the two events that fork it off the device's stream and join it
/// back.
pub(super) struct Beside {
    stream: Arc<CudaStream>,
    fork: CudaEvent,
    join: CudaEvent,
    /// Work was forked since the last join.
    pending: bool,
}

impl Beside {
    /// A stream and two events (no timing: they only order work) in `ctx`.
    pub(super) fn open(ctx: &Arc<CudaContext>) -> Result<Beside, DriverError> {
        let flags = Some(CUevent_flags::CU_EVENT_DISABLE_TIMING);
        Ok(Beside {
            stream: ctx.new_stream()?,
            fork: ctx.new_event(flags)?,
            join: ctx.new_event(flags)?,
            pending: false,
        })
    }

    /// Whether `kernel` runs beside the chain: it has buffers and writes none of them.
    pub(super) fn takes(kernel: &Kernel) -> bool {
        let mut buffers = kernel.params.iter().filter_map(|p| match p {
            KernelParam::Buffer { access, .. } => Some(*access),
            KernelParam::Scalar(_) => None,
        });
        let first = buffers.next();
        first.is_some_and(|a| !a.writes()) && buffers.all(|a| !a.writes())
    }

    /// The second stream, made to wait for everything enqueued on `main` so far.
    pub(super) fn fork(&mut self, main: &CudaStream) -> Result<&Arc<CudaStream>, DriverError> {
        self.fork.record(main)?;
        self.stream.wait(&self.fork)?;
        self.pending = true;
        Ok(&self.stream)
    }

    /// Makes `main` wait for what was forked since the last join (nothing to do where
    /// nothing was).
    pub(super) fn join(&mut self, main: &CudaStream) -> Result<(), DriverError> {
        if !self.pending {
            return Ok(());
        }
        // Cleared first: a capture that failed leaves nothing to join.
        self.pending = false;
        self.join.record(&self.stream)?;
        main.wait(&self.join)
    }
}
