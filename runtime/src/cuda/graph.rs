//! CUDA graphs of captured runs, with the programmatic edges stream capture makes out of
//! [`super::pdl`]'s launches chosen per pair of kernels.
//!
//! A kernel launched with programmatic stream serialization becomes, in a captured
//! graph, the target of a programmatic edge from the kernel before it. The edge's port
//! on the earlier kernel says when the later one may launch:
//! - `CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC` (what capture makes): when every block of
//!   the earlier kernel has exited or triggered, and weft's kernels never trigger early
//!   (`weft_codegen_cuda`'s prelude says why), so at its blocks' exit;
//! - `CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER`: when every block of the earlier kernel has
//!   begun. For a grid of several waves that is its last wave's start; for a grid that
//!   fits on the GPU at once, at once.
//!
//! Either way the later kernel's first statement waits for the earlier one to finish
//! and its writes to be visible (`griddepcontrol.wait`): the port moves the launch, not
//! the order of memory accesses.
//!
//! [`Release`] picks the port per edge; `WEFT_PDL_GRAPH` chooses the policy (measured in
//! `docs/timing.md`).

use std::sync::Arc;

use cudarc::driver::sys::{
    self, CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER, CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC,
    CUgraphDependencyType, CUgraphEdgeData, CUgraphNode, CUgraphNodeType,
};
use cudarc::driver::{CudaStream, DriverError};

/// When a captured kernel's successor may launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Release {
    /// As capture makes it: at the blocks' exit (`WEFT_PDL_GRAPH` unset or `exit`).
    Exit,
    /// When every block has begun, for every kernel (`launch`).
    Launch,
    /// When every block has begun, for kernels whose grid does not fit on the GPU at once
    /// (its last wave's start); at exit for the others (`waves`).
    LastWave,
}

impl Release {
    /// The policy `WEFT_PDL_GRAPH` names; an unknown value is warned about once and
    /// read as the default.
    pub(crate) fn from_env() -> Release {
        static READ: std::sync::OnceLock<Release> = std::sync::OnceLock::new();
        *READ.get_or_init(Release::read_env)
    }

    fn read_env() -> Release {
        match std::env::var("WEFT_PDL_GRAPH").as_deref() {
            Err(_) | Ok("") | Ok("exit") => Release::Exit,
            Ok("launch") => Release::Launch,
            Ok("waves") => Release::LastWave,
            Ok(other) => {
                eprintln!(
                    "weft: warning: WEFT_PDL_GRAPH={other:?} is not `exit`, `launch` or \
                     `waves`: using `exit`"
                );
                Release::Exit
            }
        }
    }
}

/// An instantiated graph and the graph it came from, freed together.
pub(crate) struct Captured {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    stream: Arc<CudaStream>,
}

impl Drop for Captured {
    fn drop(&mut self) {
        // SAFETY: both were created by `end_capture` below and are destroyed once, here.
        unsafe {
            let _ = sys::cuGraphExecDestroy(self.exec);
            let _ = sys::cuGraphDestroy(self.graph);
        }
    }
}

impl Captured {
    /// Launches the graph on the stream it was captured on.
    pub(crate) fn launch(&self) -> Result<(), DriverError> {
        // SAFETY: `exec` is a live instantiated graph; the stream outlives `self`.
        unsafe { sys::cuGraphLaunch(self.exec, self.stream.cu_stream()).result() }
    }

    /// Uploads the graph's work to the device ahead of its first launch.
    pub(crate) fn upload(&self) -> Result<(), DriverError> {
        // SAFETY: as in `launch`.
        unsafe { sys::cuGraphUpload(self.exec, self.stream.cu_stream()).result() }
    }
}

/// Ends the capture on `stream`, moves its programmatic edges to the port `release`
/// asks for, and instantiates it; `None` where the capture made no graph.
pub(crate) fn end_capture(
    stream: &Arc<CudaStream>,
    release: Release,
    flags: sys::CUgraphInstantiate_flags,
) -> Result<Option<Captured>, DriverError> {
    stream.context().bind_to_thread()?;
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    // SAFETY: the stream is capturing (its caller began it); `graph` receives the result.
    unsafe { sys::cuStreamEndCapture(stream.cu_stream(), &mut graph).result()? };
    if graph.is_null() {
        return Ok(None);
    }
    let edited = if release == Release::Exit {
        Ok(())
    } else {
        // SAFETY: `graph` is the live graph just captured, not yet instantiated.
        unsafe { move_edges(graph, release) }
    };
    let mut exec: sys::CUgraphExec = std::ptr::null_mut();
    let made = edited.and_then(|()| {
        // SAFETY: as above; `exec` receives the instance.
        unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, u64::from(flags.0)).result() }
    });
    if let Err(e) = made {
        // SAFETY: the graph is ours and not instantiated.
        unsafe {
            let _ = sys::cuGraphDestroy(graph);
        }
        return Err(e);
    }
    Ok(Some(Captured {
        graph,
        exec,
        stream: stream.clone(),
    }))
}

/// Re-adds every programmatic edge of `graph` from the launch-order port where
/// `release` wants it for the edge's earlier kernel.
///
/// # Safety
/// `graph` must be a live graph that is not being launched or instantiated concurrently.
unsafe fn move_edges(graph: sys::CUgraph, release: Release) -> Result<(), DriverError> {
    let mut count = 0usize;
    // SAFETY: null arrays ask for the count only.
    unsafe {
        sys::cuGraphGetEdges_v2(
            graph,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut count,
        )
        .result()?
    };
    let mut from: Vec<CUgraphNode> = vec![std::ptr::null_mut(); count];
    let mut to: Vec<CUgraphNode> = vec![std::ptr::null_mut(); count];
    // SAFETY: plain bytes; every field zero is a valid (default) edge.
    let mut data = vec![unsafe { std::mem::zeroed::<CUgraphEdgeData>() }; count];
    // SAFETY: each array holds `count` entries, as the call requires.
    unsafe {
        sys::cuGraphGetEdges_v2(
            graph,
            from.as_mut_ptr(),
            to.as_mut_ptr(),
            data.as_mut_ptr(),
            &mut count,
        )
        .result()?
    };
    let programmatic = CUgraphDependencyType::CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC as u8;
    for i in 0..count.min(from.len()) {
        let edge = data[i];
        if edge.type_ != programmatic
            || u32::from(edge.from_port) != CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC
        {
            continue;
        }
        // SAFETY: `from[i]` is a node of the live graph.
        if release == Release::LastWave && !unsafe { more_than_a_wave(from[i]) }? {
            continue;
        }
        let moved = CUgraphEdgeData {
            from_port: CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER as u8,
            ..edge
        };
        // SAFETY: the edge exists (just listed); the nodes belong to `graph`.
        unsafe {
            sys::cuGraphRemoveDependencies_v2(graph, &from[i], &to[i], &edge, 1).result()?;
            sys::cuGraphAddDependencies_v2(graph, &from[i], &to[i], &moved, 1).result()?;
        }
    }
    Ok(())
}

/// Whether kernel node `node` launches more blocks than its device holds at once (its
/// occupancy times the multiprocessors); `false` for a node that is not a kernel.
///
/// # Safety
/// `node` must be a live node of a graph on the current context.
unsafe fn more_than_a_wave(node: CUgraphNode) -> Result<bool, DriverError> {
    let mut kind = CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
    // SAFETY: `node` is live; `kind` receives its type.
    unsafe { sys::cuGraphNodeGetType(node, &mut kind).result()? };
    if kind != CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL {
        return Ok(false);
    }
    // SAFETY: a kernel node; the parameters are written into `params`.
    let params = unsafe {
        let mut params = std::mem::zeroed::<sys::CUDA_KERNEL_NODE_PARAMS>();
        sys::cuGraphKernelNodeGetParams_v2(node, &mut params).result()?;
        params
    };
    if params.func.is_null() {
        return Ok(false);
    }
    let threads = params.blockDimX * params.blockDimY * params.blockDimZ;
    let mut per_mp = 0i32;
    // SAFETY: `func` is the node's loaded function.
    unsafe {
        sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
            &mut per_mp,
            params.func,
            threads as i32,
            params.sharedMemBytes as usize,
        )
        .result()?
    };
    let mut device: sys::CUdevice = 0;
    let mut mps = 0i32;
    // SAFETY: the current context's device and its multiprocessor count.
    unsafe {
        sys::cuCtxGetDevice(&mut device).result()?;
        sys::cuDeviceGetAttribute(
            &mut mps,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            device,
        )
        .result()?;
    }
    let blocks =
        u64::from(params.gridDimX) * u64::from(params.gridDimY) * u64::from(params.gridDimZ);
    Ok(blocks > (per_mp.max(1) as u64) * (mps.max(1) as u64))
}
