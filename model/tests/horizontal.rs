//! Horizontal fusion (`weft_model::horizontal`): small independent kernels joined into one
//! give bit-identical outputs to the same kernels launched one by one, on `cpu` (the
//! interpreter) and on `vulkan` (lavapipe where present); groups that depend on each
//! other — through a cache written in place, a Concat's buffer written in place, or a
//! group between them — are never joined.

use ndarray::{ArrayD, IxDyn};
use weft_graph::op::{Binary, Concat, Op, Reduce, ReduceKind, Softmax, TensorScatter, Unary};
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_ir::kernel::KStmt;
use weft_model::compiled::HORIZONTAL;
use weft_model::horizontal::Horizontal;
use weft_model::{CompileOptions, CompiledModel};
use weft_runtime::Device;
use weft_testkit::devices::open_or_skip;

fn compile(g: &Graph, dev: &dyn Device, on: bool) -> CompiledModel {
    let options = if on {
        CompileOptions::default()
    } else {
        CompileOptions::default().with_disabled(&[HORIZONTAL.to_string()])
    };
    CompiledModel::compile(g, &dev.limits(), &options).unwrap()
}

/// Values with both signs and no pattern a wrong index could reproduce.
fn data(shape: &[usize], seed: usize) -> ArrayD<f32> {
    let n: usize = shape.iter().product();
    let v = (0..n)
        .map(|i| (((i * 7919 + seed * 104_729) % 1000) as f32 - 500.0) / 97.0)
        .collect();
    ArrayD::from_shape_vec(IxDyn(shape), v).unwrap()
}

fn run(m: &CompiledModel, dev: &mut dyn Device, inputs: &[ArrayD<f32>]) -> Vec<ArrayD<f32>> {
    let exe = m.load(dev).unwrap();
    let out = exe.run(dev, inputs).unwrap();
    exe.free(dev);
    out
}

fn bits(xs: &[ArrayD<f32>]) -> Vec<Vec<u32>> {
    xs.iter()
        .map(|x| x.iter().map(|v| v.to_bits()).collect())
        .collect()
}

/// The group whose nodes hold the node named `name`.
fn group_of(m: &CompiledModel, name: &str) -> usize {
    m.partition
        .groups
        .iter()
        .position(|gr| gr.nodes().any(|n| m.graph.nodes[n.0].name == name))
        .unwrap_or_else(|| panic!("no group holds `{name}`"))
}

/// Whether the groups holding nodes `a` and `b` run in one kernel.
fn joined(m: &CompiledModel, a: &str, b: &str) -> bool {
    let pos = weft_model::horizontal::positions(&m.groups);
    pos[group_of(m, a)] == pos[group_of(m, b)]
}

/// Five independent branches of odd sizes on graph inputs: an elementwise one of 37
/// elements, a softmax over 3 rows of 101 (a reduction across a block's 256 threads), a
/// binary one of 105, a sigmoid of a scalar (a block of one thread), and a sum of 23
/// elements (a block of 32 threads summing by shuffles).
fn branches() -> (Graph, Vec<ArrayD<f32>>) {
    let mut b = GraphBuilder::new("branches");
    let x = b.input("x", &[1, 37], DType::F32);
    let y = b.input("y", &[3, 101], DType::F32);
    let z = b.input("z", &[5, 7, 3], DType::F32);
    let u = b.input("u", &[23], DType::F32);
    let v = b.input("v", &[], DType::F32);
    let w = b.weight("w", data(&[5, 7, 3], 9));
    let r = b.relu("relu_x", x).unwrap();
    let s = b
        .node("softmax_y", Op::Softmax(Softmax { axis: 1 }), &[y])
        .unwrap();
    let m = b.binary("mul_z", Binary::Mul, z, w).unwrap();
    let sum = Reduce {
        kind: ReduceKind::Sum,
        axes: vec![0],
        keep_dims: false,
    };
    let one = b.unary("sigmoid_v", Unary::Sigmoid, v).unwrap();
    let t = b.node("sum_u", Op::Reduce(sum), &[u]).unwrap();
    for t in [r, s, m, t, one] {
        b.output(t);
    }
    let inputs = vec![
        data(&[1, 37], 1),
        data(&[3, 101], 2),
        data(&[5, 7, 3], 3),
        data(&[23], 4),
        data(&[], 5),
    ];
    (b.finish().unwrap(), inputs)
}

fn independent_branches_join(target: &str) {
    let Some(mut dev) = open_or_skip(target) else {
        return;
    };
    let (g, inputs) = branches();
    let on = compile(&g, dev.as_ref(), true);
    let off = compile(&g, dev.as_ref(), false);
    assert_eq!(off.kernel_count(), 5, "{}", off.show());
    assert_eq!(on.kernel_count(), 2, "{}", on.show());
    for other in ["softmax_y", "mul_z", "sigmoid_v"] {
        assert!(joined(&on, "relu_x", other), "{}", on.show());
    }
    // The sum's 32 threads shuffle: under a guard in a block of 256 some would not
    // take part, so it stays alone.
    assert!(!joined(&on, "relu_x", "sum_u"), "{}", on.show());
    assert_eq!(on.horizontal.len(), 1, "{:?}", on.horizontal);
    // The joined kernel has the parts' blocks, one after another.
    let k = on
        .groups
        .iter()
        .find(|g| matches!(g.horizontal, Horizontal::Carries(_)))
        .map(|g| &g.kernels.kernels[0])
        .unwrap();
    let parts: u32 = ["relu_x", "softmax_y", "mul_z", "sigmoid_v"]
        .iter()
        .map(|n| {
            off.groups[group_of(&off, n)].kernels.kernels[0]
                .grid
                .iter()
                .product::<u32>()
        })
        .sum();
    assert_eq!(k.grid, [parts, 1, 1]);
    let a = run(&on, dev.as_mut(), &inputs);
    let b = run(&off, dev.as_mut(), &inputs);
    assert!(a.iter().all(|x| x.iter().all(|v| v.is_finite())));
    assert_eq!(bits(&a), bits(&b), "{target}");
}

#[test]
fn independent_branches_join_bit_identical_on_cpu() {
    independent_branches_join("cpu");
}

#[test]
fn independent_branches_join_bit_identical_on_vulkan() {
    independent_branches_join("vulkan");
}

/// The joined kernel of the branches holds parts of different block sizes, and the part
/// with a reduction across threads (a barrier or a shuffle) is one of them: the case the
/// thread guard must leave whole.
#[test]
fn the_joined_parts_differ_in_threads_and_one_reduces_across_them() {
    let Some(dev) = open_or_skip("cpu") else {
        return;
    };
    let (g, _) = branches();
    let off = compile(&g, dev.as_ref(), false);
    let threads: Vec<u64> = off
        .groups
        .iter()
        .map(|g| g.kernels.kernels[0].threads_per_block())
        .collect();
    assert!(threads.iter().any(|&t| t != threads[0]), "{threads:?}");
    let on = compile(&g, dev.as_ref(), true);
    assert!(joined(&on, "softmax_y", "sigmoid_v"), "{}", on.show());
    let soft = &off.groups[group_of(&off, "softmax_y")].kernels.kernels[0];
    let mut collective = false;
    soft.body
        .visit(&mut |s| collective |= matches!(s, KStmt::Barrier));
    soft.body.visit_exprs(&mut |e| {
        e.visit(&mut |e| {
            collective |= matches!(e, weft_ir::expr::Expr::Call(f, _) if f.is_collective())
        })
    });
    assert!(collective, "{soft}");
}

/// A K and a V cache each written in place at the position, and a kernel reading the K
/// cache after: the two writes join (different caches), the reader joins neither.
fn caches() -> (Graph, Vec<ArrayD<f32>>) {
    let mut b = GraphBuilder::new("caches");
    let past_k = b.input("past_k", &[1, 2, 8, 5], DType::F32);
    let past_v = b.input("past_v", &[1, 2, 8, 5], DType::F32);
    let k = b.input("k", &[1, 2, 1, 5], DType::F32);
    let v = b.input("v", &[1, 2, 1, 5], DType::F32);
    let at = b.input("at", &[1], DType::I32);
    let scatter = Op::TensorScatter(TensorScatter { axis: 2 });
    let kc = b
        .node("write_k", scatter.clone(), &[past_k, k, at])
        .unwrap();
    let vc = b.node("write_v", scatter, &[past_v, v, at]).unwrap();
    let read = b.unary("read_k", Unary::Sigmoid, kc).unwrap();
    for t in [kc, vc, read] {
        b.output(t);
    }
    let mut at = ArrayD::zeros(IxDyn(&[1]));
    at[0] = 3.0;
    let inputs = vec![
        data(&[1, 2, 8, 5], 4),
        data(&[1, 2, 8, 5], 5),
        data(&[1, 2, 1, 5], 6),
        data(&[1, 2, 1, 5], 7),
        at,
    ];
    (b.finish().unwrap(), inputs)
}

fn caches_join_only_independent(target: &str) {
    let Some(mut dev) = open_or_skip(target) else {
        return;
    };
    let (g, inputs) = caches();
    let on = compile(&g, dev.as_ref(), true);
    let off = compile(&g, dev.as_ref(), false);
    assert!(
        weft_graph::partition::in_place(
            &on.graph,
            on.partition.groups[group_of(&on, "write_k")].root
        ),
        "{}",
        on.show()
    );
    assert!(joined(&on, "write_k", "write_v"), "{}", on.show());
    assert!(!joined(&on, "write_k", "read_k"), "{}", on.show());
    assert!(!joined(&on, "write_v", "read_k"), "{}", on.show());
    assert_eq!(on.kernel_count() + 1, off.kernel_count());
    let a = run(&on, dev.as_mut(), &inputs);
    let b = run(&off, dev.as_mut(), &inputs);
    assert_eq!(bits(&a), bits(&b), "{target}");
}

#[test]
fn cache_writes_join_and_a_cache_reader_does_not_on_cpu() {
    caches_join_only_independent("cpu");
}

#[test]
fn cache_writes_join_and_a_cache_reader_does_not_on_vulkan() {
    caches_join_only_independent("vulkan");
}

/// Two kernels writing slices of one Concat's buffer in place and a kernel reading the
/// Concat: none joins another (each touches the one buffer, one of them writing it).
#[test]
fn kernels_on_a_concat_buffer_written_in_place_do_not_join() {
    let Some(mut dev) = open_or_skip("cpu") else {
        return;
    };
    let mut b = GraphBuilder::new("concat");
    let x1 = b.input("x1", &[1, 9], DType::F32);
    let x2 = b.input("x2", &[1, 7], DType::F32);
    let a1 = b.relu("left", x1).unwrap();
    let a2 = b.unary("right", Unary::Sigmoid, x2).unwrap();
    let c = b
        .node("cat", Op::Concat(Concat { axis: 1 }), &[a1, a2])
        .unwrap();
    let d = b.unary("after", Unary::Tanh, c).unwrap();
    b.output(d);
    let g = b.finish().unwrap();
    let on = compile(&g, dev.as_ref(), true);
    assert!(!on.partition.views.is_empty(), "{}", on.show());
    assert!(!joined(&on, "left", "after"), "{}", on.show());
    assert!(!joined(&on, "right", "after"), "{}", on.show());
    assert!(!joined(&on, "left", "right"), "{}", on.show());
    let off = compile(&g, dev.as_ref(), false);
    assert_eq!(on.kernel_count(), off.kernel_count());
    let inputs = [data(&[1, 9], 1), data(&[1, 7], 2)];
    let a = run(&on, dev.as_mut(), &inputs);
    assert_eq!(bits(&a), bits(&run(&off, dev.as_mut(), &inputs)));
}

/// `first` (small), a product, `late` (small, independent of all), then `after` reading
/// the product (a reduction): `late` moves up past the product to `first`'s kernel;
/// `after` cannot move up past the product it reads, so it joins nothing.
#[test]
fn a_kernel_does_not_move_up_past_a_group_it_reads() {
    let Some(mut dev) = open_or_skip("cpu") else {
        return;
    };
    let mut b = GraphBuilder::new("between");
    let x = b.input("x", &[1, 13], DType::F32);
    let y = b.input("y", &[4, 16], DType::F32);
    let z = b.input("z", &[3, 11], DType::F32);
    let w = b.weight("w", data(&[16, 24], 8));
    let first = b.relu("first", x).unwrap();
    let p = b.node("product", Op::MatMul, &[y, w]).unwrap();
    let late = b.unary("late", Unary::Sigmoid, z).unwrap();
    let after = b
        .node("after", Op::Softmax(Softmax { axis: 1 }), &[p])
        .unwrap();
    for t in [first, after, late] {
        b.output(t);
    }
    let g = b.finish().unwrap();
    let on = compile(&g, dev.as_ref(), true);
    let order = |n: &str| group_of(&on, n);
    assert!(order("first") < order("product") && order("product") < order("late"));
    assert!(order("late") < order("after"), "{}", on.show());
    assert!(!joined(&on, "first", "after"), "{}", on.show());
    assert!(!joined(&on, "product", "after"), "{}", on.show());
    assert!(joined(&on, "first", "late"), "{}", on.show());
    let off = compile(&g, dev.as_ref(), false);
    let inputs = [data(&[1, 13], 1), data(&[4, 16], 2), data(&[3, 11], 3)];
    let a = run(&on, dev.as_mut(), &inputs);
    assert_eq!(bits(&a), bits(&run(&off, dev.as_mut(), &inputs)));
}

/// The joined kernel of the branches compiled for each language's offline profile
/// emits (no device needed): one entry point holding every part, each part's block
/// range tested on the block index.
#[test]
fn the_joined_kernel_emits_in_every_language() {
    let (g, _) = branches();
    for t in [
        "cuda",
        "cuda -arch=sm_90a",
        "rocm",
        "vulkan",
        "metal",
        "webgpu",
    ] {
        let target = weft_runtime::Target::parse(t).unwrap();
        let m = CompiledModel::compile(&g, &target.limits(), &CompileOptions::default()).unwrap();
        let carrier = m
            .groups
            .iter()
            .find(|g| matches!(g.horizontal, Horizontal::Carries(_)))
            .unwrap_or_else(|| panic!("{t}: nothing joined\n{}", m.show()));
        let emitted = target.emit_function(&carrier.kernels).unwrap();
        assert_eq!(emitted.kernels.len(), 1, "{t}");
        for part in ["relu_x", "softmax_y", "mul_z", "sigmoid_v"] {
            assert!(
                emitted.source.contains("horizontal part: k") && emitted.source.contains(part),
                "{t}: no `{part}` in\n{}",
                emitted.source
            );
        }
    }
}
