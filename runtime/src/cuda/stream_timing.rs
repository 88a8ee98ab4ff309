//! Kernel time on one CUDA stream, shared by the `cuda` device and the reference rows
//! (cuBLAS, cuDNN, copies), so that a weft kernel and its reference are timed alike.
//!
//! One event pair brackets each group of back-to-back runs, and the group is replayed as
//! a CUDA graph where the driver can capture it: the GPU then runs the kernels with no gap
//! and no host launch cost in between, so a sample is kernel time. (A host launch costs
//! a few microseconds: a 2 µs kernel launched in a loop reads as the launch rate, and one
//! event pair per launch times a 4 µs kernel as about 9 µs.) Where a capture is refused
//! the group is launched from the host, still back to back. The host's own view — launch,
//! then wait — is measured separately and reported beside kernel time, never mixed in.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::sys::{CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaContext, CudaGraph, CudaStream};

use super::driver::driver;
use crate::error::CudaError;
use crate::timing::{Timing, warm_up};

/// Event pairs per timing: each times `iters / SAMPLES` back-to-back runs.
const SAMPLES: usize = 10;

/// Runs launched and waited for one at a time, for the host's view of a run.
const HOST_SAMPLES: usize = 5;

/// The most warm-up runs enqueued before the next look at the clock.
const MAX_WARM_UP_BATCH: usize = 4096;

/// Times `iters` runs of `run` (which enqueues one run's work on `stream`) and, apart,
/// the host's launch-and-wait round trip. `warmup` runs go first, untimed, and with
/// `warmup > 0` more of them until the warm-up has lasted [`crate::WARM_UP`] (the clocks
/// of a GPU that sat idle take that long to come back up).
pub(crate) fn time_runs<E: From<CudaError>>(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    warmup: usize,
    iters: usize,
    run: &mut dyn FnMut() -> Result<(), E>,
) -> Result<Option<Timing>, E> {
    warm_up(warmup, true, MAX_WARM_UP_BATCH, |n| {
        for _ in 0..n {
            run()?;
        }
        driver("synchronize after warm-up", || stream.synchronize()).map_err(E::from)
    })?;
    // Timing must be enabled explicitly: `new_event(None)` disables it.
    let new_event = || {
        driver("creating a timing event", || {
            ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        })
    };
    let groups = iters.min(SAMPLES);
    if groups == 0 {
        return Ok(None);
    }
    let runs = iters.div_ceil(groups);
    let graph = capture(stream, runs, run);
    let mut events = Vec::with_capacity(groups);
    for _ in 0..groups {
        let (start, end) = (new_event()?, new_event()?);
        driver("recording an event", || start.record(stream))?;
        match &graph {
            Some(g) => driver("launching a CUDA graph", || g.launch())?,
            None => {
                for _ in 0..runs {
                    run()?;
                }
            }
        }
        driver("recording an event", || end.record(stream))?;
        events.push((start, end));
    }
    driver("synchronize after timed runs", || stream.synchronize())?;
    let mut all = Vec::with_capacity(groups);
    for (start, end) in &events {
        let ms = driver("reading an event time", || start.elapsed_ms(end))?;
        all.push(Duration::from_secs_f64(
            ms.max(0.0) as f64 / 1e3 / runs as f64,
        ));
    }
    let mut host = Vec::with_capacity(HOST_SAMPLES);
    for _ in 0..HOST_SAMPLES {
        let started = Instant::now();
        run()?;
        driver("synchronize", || stream.synchronize())?;
        host.push(started.elapsed());
    }
    Ok(Timing::from_samples(all).map(|t| t.with_host(host)))
}

/// `runs` back-to-back runs captured as a CUDA graph, uploaded and run once; `None`
/// where the driver (or a library enqueuing work) refuses the capture.
pub(super) fn capture<E>(
    stream: &Arc<CudaStream>,
    runs: usize,
    run: &mut dyn FnMut() -> Result<(), E>,
) -> Option<CudaGraph> {
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .ok()?;
    let mut queued = true;
    for _ in 0..runs {
        if run().is_err() {
            queued = false;
            break;
        }
    }
    // Always end the capture, so the stream is usable again whatever happened.
    let flags = CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH;
    let graph = stream.end_capture(flags).ok()??;
    if !queued {
        return None;
    }
    graph.upload().ok()?;
    graph.launch().ok()?;
    stream.synchronize().ok()?;
    Some(graph)
}
