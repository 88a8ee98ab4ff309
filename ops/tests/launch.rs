//! The launch shapes are the seeds' (issue 2, point 10).

use weft_ir::kernel::{KStmt, Kernel};
use weft_ops::{Shape, Workload, find};

fn kernel(op: &str, values: &[i64], schedule: &str) -> Kernel {
    let shape = Shape::from_values(find(op).unwrap(), values).unwrap();
    let w = Workload::new(op, &shape).unwrap();
    let l = w.lower(schedule).unwrap();
    assert_eq!(l.kernels.len(), 1, "{op} {schedule}: one kernel");
    l.kernels.into_iter().next().unwrap()
}

/// Serial loops (extent, var name) in program order.
fn serial_loops(k: &Kernel) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    k.body.visit(&mut |s| {
        if let KStmt::For { var, extent, .. } = s {
            out.push((*extent, var.name().to_string()));
        }
    });
    out
}

const DW: [i64; 6] = [3, 4, 16, 32, 7, 1];

#[test]
fn depthwise_v1_grid() {
    let k = kernel("depthwise-conv2d", &DW, "v1");
    assert_eq!(k.grid, [3, 4, 1]);
    assert_eq!(k.block, [1, 1, 1]);
}

#[test]
fn depthwise_v2_grid() {
    let k = kernel("depthwise-conv2d", &DW, "v2");
    assert_eq!(k.grid, [12, 16, 1]);
}

#[test]
fn depthwise_v3_grid_block_and_two_serial_w_outer_iterations() {
    let k = kernel("depthwise-conv2d", &DW, "v3");
    assert_eq!(k.grid, [12, 1, 1]);
    assert_eq!(k.block, [16, 16, 1]);
    let loops = serial_loops(&k);
    assert_eq!(loops[0], (2, "w_0".to_string()), "{loops:?}");
    let names: Vec<&str> = loops.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, ["w_0", "ry", "rx"]);
}

#[test]
fn depthwise_v4_grid_block_and_only_the_reduction_loops() {
    let k = kernel("depthwise-conv2d", &DW, "v4");
    assert_eq!(k.grid, [12, 2, 1]);
    assert_eq!(k.block, [16, 16, 1]);
    let names: Vec<String> = serial_loops(&k).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["ry", "rx"]);
}

#[test]
fn matmul_local_blocking_1024() {
    let k = kernel("matmul", &[1024, 1024, 1024], "local-blocking");
    assert_eq!(k.grid, [16, 16, 1]);
    assert_eq!(k.block, [8, 8, 1]);
    assert_eq!(k.locals.len(), 1);
    assert_eq!(k.locals[0].numel(), 64, "64 local accumulators per thread");
    assert!(k.shared.is_empty());
}

#[test]
fn matmul_shared_blocking_1024() {
    let k = kernel("matmul", &[1024, 1024, 1024], "shared-blocking");
    assert_eq!(k.grid, [16, 16, 1]);
    assert_eq!(k.threads_per_block(), 64);
    let shapes: Vec<Vec<i64>> = k.shared.iter().map(|b| b.shape().to_vec()).collect();
    assert_eq!(shapes, [vec![64, 8], vec![8, 64]]);
    assert_eq!(k.locals[0].numel(), 64);
    // The cooperative fetch is vectorized: 4-wide copies into shared memory.
    let mut vector_stores = 0;
    k.body.visit(&mut |s| {
        if let KStmt::Store {
            lanes: 4, buffer, ..
        } = s
        {
            assert!(buffer.name().ends_with("_shared"));
            vector_stores += 1;
        }
    });
    assert_eq!(vector_stores, 2);
}

#[test]
fn window_sum_shared_fetch_keeps_130_elements() {
    let k = kernel("window-sum", &[1024], "shared-fetch");
    assert_eq!(k.shared.len(), 1);
    assert_eq!(k.shared[0].numel(), 130, "not 1027");
    let mut barriers = 0;
    k.body
        .visit(&mut |s| barriers += matches!(s, KStmt::Barrier) as usize);
    assert_eq!(barriers, 1);
}

/// `grid-stride` launches the blocks n fills, up to 2048; past 2048 x 256 elements each
/// thread loops over the rest.
#[test]
fn vecadd_grid_stride_grid_is_sized_from_n() {
    for (n, blocks, passes) in [
        (1, 1, None),
        (1000, 4, None),
        (1024, 4, None),
        (1025, 5, None),
        (2048 * 256, 2048, None),
        (2048 * 256 + 1, 2048, Some(2)),
        (1 << 26, 2048, Some(128)),
    ] {
        let k = kernel("vecadd", &[n], "grid-stride");
        assert_eq!(k.grid, [blocks, 1, 1], "n = {n}");
        assert_eq!(k.block, [256, 1, 1], "n = {n}");
        let loops = serial_loops(&k);
        assert_eq!(loops.first().map(|l| l.0), passes, "n = {n}: {loops:?}");
    }
}
