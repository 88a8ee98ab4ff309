//! The example of `docs/architecture.md`, "Adding a graph pass", compiled and run: the
//! section's code block is this file's from `// Example:` on, which the last test checks,
//! so that the page never shows code that does not build.

// Example:
use weft_graph::op::{Op, Unary};
use weft_graph::passes::PassContext;
use weft_graph::passes::testing::rewrite;
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;

/// `Relu(Relu(x))` is `Relu(x)`: the outer ReLU reads `x`, and the inner one goes where
/// nothing else reads it. Returns how many went.
pub fn merge_double_relus(g: &mut Graph, _: &PassContext) -> usize {
    let relu = Op::Unary(Unary::Relu);
    let mut changed = 0;
    loop {
        let (producers, consumers) = (g.producers(), g.consumers());
        // An outer ReLU whose input an inner ReLU makes, which nothing else reads.
        let found = g.nodes.iter().enumerate().find_map(|(outer, n)| {
            let r = *n.inputs.first()?;
            let inner = *producers.get(&r)?;
            let alone = consumers.get(&r).is_some_and(|c| c.len() == 1);
            let fits = n.op == relu && g.nodes[inner.0].op == relu;
            (fits && alone && !g.outputs.contains(&r)).then_some((outer, inner.0))
        });
        let Some((outer, inner)) = found else {
            return changed;
        };
        g.nodes[outer].inputs[0] = g.nodes[inner].inputs[0];
        g.nodes.remove(inner);
        changed += 1;
    }
}

#[test]
fn a_relu_of_a_relu_is_one_relu() {
    let mut b = GraphBuilder::new("t");
    let x = b.input("x", &[4], DType::F32);
    let r = b.relu("inner", x).unwrap();
    let y = b.relu("outer", r).unwrap();
    b.output(y);
    let g = b.finish().unwrap();
    // A small graph in, the rewritten graph out; the same outputs in float64.
    rewrite(&g, merge_double_relus).check(
        1,
        "
        graph t (1 nodes, 0 parameters)
          input  %x: f32[4]
          %outer = Relu(%x): f32[4]    # outer
          output %outer
        ",
        0.0,
    );
}
// End of the example.

#[test]
fn the_architecture_page_shows_this_example() {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/architecture.md"
    ))
    .expect("docs/architecture.md");
    let section = page
        .split("## Adding a graph pass")
        .nth(1)
        .expect("a section \"Adding a graph pass\"");
    let block = section
        .split("```rust\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a rust code block in the section");
    let this = include_str!("adding_a_pass.rs");
    let example = this
        .split("// Example:\n")
        .nth(1)
        .and_then(|e| e.split("// End of the example.").next())
        .expect("the example's markers");
    assert_eq!(block, example, "the page's example and this file's differ");
}
