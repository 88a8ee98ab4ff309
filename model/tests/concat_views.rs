//! Concats written in place, run: the buffer a chain of Concats shares lives until the
//! last reader of any of its slices, and Concats that cannot be views still copy right
//! (reading inputs that lie in another Concat's buffer). Each graph is compiled, run on
//! poisoned buffers (NaN in every output and intermediate) and compared with the float64
//! reference, on the interpreter and on Vulkan.

use ndarray::{ArrayD, IxDyn};
use weft_graph::op::{Conv, PoolKind, Unary};
use weft_graph::{Graph, GraphBuilder, TensorId};
use weft_ir::dtype::DType;
use weft_model::CompileOptions;
use weft_model::measure::{Measure, Reference, measure};
use weft_model::plan::Home;
use weft_runtime::Device;
use weft_testkit::devices::open_or_skip;

fn weight(b: &mut GraphBuilder, name: &str, shape: &[usize], scale: f32) -> TensorId {
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n)
        .map(|i| ((i * 7 % 13) as f32 - 6.0) * scale)
        .collect();
    b.weight(name, ArrayD::from_shape_vec(IxDyn(shape), data).unwrap())
}

/// `cat1 = [a, b]` and `cat2 = [a, b, c]` share `cat2`'s buffer; `u` reads `cat2`, then
/// `v` (as large as the buffer) is made, and only then does a convolution read `cat1`:
/// the buffer must live until that last read of its prefix, or `v` would take it.
fn prefix_read_last() -> Graph {
    let mut b = GraphBuilder::new("prefix_last");
    let x = b.input("x", &[1, 2, 5, 5], DType::F32);
    let a = b.relu("a", x).unwrap();
    let n = b.unary("b", Unary::Neg, x).unwrap();
    let cat1 = b.concat("cat1", &[a, n], 1).unwrap();
    let c = b.pool("c", PoolKind::Max, x, 3, 1, 1).unwrap();
    let cat2 = b.concat("cat2", &[a, n, c], 1).unwrap();
    let wu = weight(&mut b, "wu", &[2, 6, 3, 3], 0.05);
    let u = b.conv("u", cat2, wu, None, Conv::new(1, 1)).unwrap();
    let wv = weight(&mut b, "wv", &[6, 2, 3, 3], 0.05);
    let v = b.conv("v", u, wv, None, Conv::new(1, 1)).unwrap();
    let ww = weight(&mut b, "ww", &[6, 4, 3, 3], 0.05);
    let w = b.conv("w", cat1, ww, None, Conv::new(1, 1)).unwrap();
    let y = b.add("y", w, v).unwrap();
    // Read twice, `v` is stored (not fused into a product's epilogue).
    let z = b.relu("z", v).unwrap();
    b.output(y);
    b.output(z);
    b.finish().unwrap()
}

/// Concats that copy: `a` in two Concats that are not one chain (the second copies,
/// reading `a` where it lies, in the first one's buffer after `c`), and a Concat of a
/// graph input.
fn copies() -> Graph {
    let mut b = GraphBuilder::new("copies");
    let x = b.input("x", &[2, 2, 5, 5], DType::F32);
    let a = b.relu("a", x).unwrap();
    let c = b.pool("c", PoolKind::Max, x, 3, 1, 1).unwrap();
    let d = b.pool("d", PoolKind::Average, x, 3, 1, 1).unwrap();
    let one = b.concat("one", &[c, a], 1).unwrap();
    let two = b.concat("two", &[a, d], 1).unwrap();
    let s = b.add("s", one, two).unwrap();
    let e = b.unary("e", Unary::Neg, s).unwrap();
    let three = b.concat("three", &[x, e], 1).unwrap();
    let w = weight(&mut b, "w", &[3, 6, 3, 3], 0.05);
    let y = b.conv("y", three, w, None, Conv::new(1, 1)).unwrap();
    b.output(y);
    b.finish().unwrap()
}

/// `[a, m, v]` (a graph output), then `[m, v]`, a view inside it from `a`'s end, read by
/// a convolution: reads shifted by the view's offset.
fn view_inside() -> Graph {
    let mut b = GraphBuilder::new("inside");
    let x = b.input("x", &[2, 2, 5, 5], DType::F32);
    let a = b.relu("a", x).unwrap();
    let m = b.pool("m", PoolKind::Max, x, 3, 1, 1).unwrap();
    let v = b.pool("v", PoolKind::Average, x, 3, 1, 1).unwrap();
    let all = b.concat("all", &[a, m, v], 1).unwrap();
    let tail = b.concat("tail", &[m, v], 1).unwrap();
    let w = weight(&mut b, "w", &[3, 4, 3, 3], 0.05);
    let y = b.conv("y", tail, w, None, Conv::new(1, 1)).unwrap();
    b.output(all);
    b.output(y);
    b.finish().unwrap()
}

fn input(g: &Graph) -> Vec<ArrayD<f32>> {
    let shape = &g.tensor(g.inputs[0]).shape;
    let mut k = 0.0f32;
    vec![ArrayD::from_shape_fn(IxDyn(shape), |_| {
        k += 1.0;
        (k * 0.37).sin() * 2.0
    })]
}

fn check(dev: &mut dyn Device, g: &Graph) -> weft_model::measure::Measured {
    let inputs = input(g);
    let m = Measure {
        inputs: Some(&inputs),
        reference: Reference::Float64,
        warmup: 0,
        iters: 1,
        whole: false,
        each: false,
    };
    let measured = measure(g, dev, &CompileOptions::default(), &m).unwrap();
    assert!(
        measured.wrong().is_none(),
        "{}: {:?}\n{}",
        g.name,
        measured.checked,
        measured.model.show()
    );
    measured
}

fn prefix_read_last_on(dev: &mut dyn Device) {
    let g = prefix_read_last();
    let measured = check(dev, &g);
    let model = &measured.model;
    assert!(model.partition.copies.is_empty(), "{}", model.show());
    assert_eq!(model.partition.views.len(), 2);
    // `v` must not share the Concats' buffer: it is made while `cat1` is still to be read.
    let named = |name: &str| {
        let i = model.graph.tensors.iter().position(|t| t.name == name);
        model.plan.homes[&TensorId(i.unwrap())]
    };
    let (buffer, v) = (named("cat2"), named("v"));
    assert!(matches!(buffer, Home::Slot(_)), "{buffer:?}");
    assert_ne!(buffer, v, "{}", model.show());
}

fn copies_on(dev: &mut dyn Device) {
    let g = copies();
    let measured = check(dev, &g);
    let p = &measured.model.partition;
    assert_eq!((p.views.len(), p.copies.len()), (1, 2), "{:?}", p.copies);
}

#[test]
fn a_shared_buffer_lives_until_its_prefix_is_read_on_cpu() {
    if let Some(mut dev) = open_or_skip("cpu") {
        prefix_read_last_on(dev.as_mut());
    }
}

#[test]
fn a_shared_buffer_lives_until_its_prefix_is_read_on_vulkan() {
    if let Some(mut dev) = open_or_skip("vulkan") {
        prefix_read_last_on(dev.as_mut());
    }
}

#[test]
fn a_view_inside_a_buffer_is_read_at_its_offset() {
    for target in ["cpu", "vulkan"] {
        if let Some(mut dev) = open_or_skip(target) {
            let measured = check(dev.as_mut(), &view_inside());
            let p = &measured.model.partition;
            assert_eq!((p.views.len(), p.copies.len()), (2, 0), "{:?}", p.copies);
        }
    }
}

#[test]
fn concats_that_copy_read_inputs_where_they_lie() {
    for target in ["cpu", "vulkan"] {
        if let Some(mut dev) = open_or_skip(target) {
            copies_on(dev.as_mut());
        }
    }
}
