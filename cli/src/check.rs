//! `weft model check`'s search for the first graph node whose output differs from ONNX
//! Runtime's: which nodes it searches, which tensors stand for an ONNX node, and the
//! bisection itself — knowing nothing of devices or ONNX Runtime (the command measures,
//! through [`bisect`]'s `measure`).
//!
//! A tensor has an ONNX Runtime *twin* where a node of the file ONNX Runtime runs
//! computes a tensor of its name: weft keeps ONNX's names for what a node computes, so
//! every weft node an ONNX node became has one at its last step, and the steps before it
//! (`NAME::tag`, nodes weft made itself) have none. The search runs over the twinned
//! tensors that lead to the wrong output, in the graph's (topological) order.

use std::collections::{HashMap, HashSet};

use weft_graph::{Graph, NodeId, TensorId};

/// The tensors computed by nodes of `g` with a twin (`twin(name)`) that `output` depends
/// on, `output` included where it has one, in node order.
pub(crate) fn candidates(
    g: &Graph,
    output: TensorId,
    twin: &dyn Fn(&str) -> bool,
) -> Vec<TensorId> {
    let producers = g.producers();
    let mut needed: HashSet<TensorId> = HashSet::new();
    let mut todo = vec![output];
    while let Some(t) = todo.pop() {
        if !needed.insert(t) {
            continue;
        }
        if let Some(n) = producers.get(&t) {
            todo.extend(g.nodes[n.0].inputs.iter().copied());
        }
    }
    g.nodes
        .iter()
        .map(|n| n.output)
        .filter(|t| needed.contains(t) && twin(&g.tensor(*t).name))
        .collect()
}

/// One ONNX node as weft holds it: the weft nodes it became (the one computing its
/// twinned output and the untwinned steps before it, in node order) and what they read
/// from outside (twinned tensors, graph inputs, constants), in order of first read.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Unit {
    pub(crate) nodes: Vec<NodeId>,
    pub(crate) inputs: Vec<TensorId>,
}

/// The [`Unit`] whose last node computes `t`.
pub(crate) fn unit(g: &Graph, t: TensorId, twin: &dyn Fn(&str) -> bool) -> Unit {
    let producers = g.producers();
    let mut nodes: Vec<NodeId> = Vec::new();
    let mut inputs: Vec<TensorId> = Vec::new();
    let mut todo: Vec<TensorId> = vec![t];
    let mut seen: HashSet<TensorId> = HashSet::new();
    while let Some(x) = todo.pop() {
        if !seen.insert(x) {
            continue;
        }
        let Some(&n) = producers.get(&x) else {
            continue;
        };
        nodes.push(n);
        for &i in g.nodes[n.0].inputs.iter().rev() {
            let inside = producers.contains_key(&i) && !twin(&g.tensor(i).name);
            if inside {
                todo.push(i);
            }
        }
    }
    nodes.sort();
    for &n in &nodes {
        for &i in &g.nodes[n.0].inputs {
            let inside = nodes.iter().any(|&m| g.nodes[m.0].output == i);
            if !inside && !inputs.contains(&i) {
                inputs.push(i);
            }
        }
    }
    Unit { nodes, inputs }
}

/// `g` with `probes` among its outputs (after the ones it has; a probe that is an output
/// already is not added twice), and where each probe is among them.
pub(crate) fn exposing(g: &Graph, probes: &[TensorId]) -> (Graph, Vec<usize>) {
    let mut exposed = g.clone();
    let at = probes
        .iter()
        .map(|&p| match exposed.outputs.iter().position(|&o| o == p) {
            Some(k) => k,
            None => {
                exposed.outputs.push(p);
                exposed.outputs.len() - 1
            }
        })
        .collect();
    (exposed, at)
}

/// What one compile with tensors exposed measured.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Round {
    /// Each probe's error against ONNX Runtime, in the order asked.
    pub(crate) errors: Vec<f64>,
    /// Whether the output the search started from was still beyond tolerance.
    pub(crate) output_wrong: bool,
}

/// What the search found.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Found {
    /// The first node beyond tolerance whose computed inputs are all within it: its
    /// output and error, and each computed input with its error.
    Node {
        tensor: TensorId,
        error: f64,
        inputs: Vec<(TensorId, f64)>,
    },
    /// Storing tensors made the disagreement vanish: nothing measured was wrong and the
    /// output was right. It lies after `after` (the last tensor found right; `None`:
    /// the graph's inputs) and up to `upto`, in what weft fuses there.
    Vanished {
        after: Option<TensorId>,
        upto: TensorId,
    },
}

/// Up to `k` positions spread evenly over `start..end` (all of them where they are no
/// more than `k`): the range falls into `k + 1` parts of about equal length.
fn spread(start: usize, end: usize, k: usize) -> Vec<usize> {
    let count = end - start;
    if count <= k {
        return (start..end).collect();
    }
    let mut picks: Vec<usize> = (1..=k)
        .map(|i| start + i * (count + 1) / (k + 1) - 1)
        .collect();
    picks.dedup();
    picks
}

/// Searches `candidates` (twinned tensors in node order; the last is the wrong output,
/// `output_error` its error) for the first node whose output is beyond `tolerance` while
/// every computed input is within it. `measure` compiles and runs the model with the
/// tensors given exposed and returns their errors; each call exposes up to `probes`
/// tensors spread over the range still open, which therefore shrinks by `probes + 1`
/// each compile. Where the node found has inputs not measured yet, one more compile
/// measures them; an input beyond tolerance (an error masked on the way and found again
/// further on) restarts the search below it. `inputs_of` gives a tensor's computed,
/// twinned inputs.
pub(crate) fn bisect<E>(
    candidates: &[TensorId],
    output_error: f64,
    tolerance: f64,
    probes: usize,
    inputs_of: &dyn Fn(TensorId) -> Vec<TensorId>,
    measure: &mut dyn FnMut(&[TensorId]) -> Result<Round, E>,
) -> Result<Found, E> {
    let Some(&last) = candidates.last() else {
        unreachable!("the wrong output is a candidate")
    };
    let position: HashMap<TensorId, usize> = candidates
        .iter()
        .enumerate()
        .map(|(i, &t)| (t, i))
        .collect();
    let mut known: HashMap<TensorId, f64> = HashMap::from([(last, output_error)]);
    let bad = |known: &HashMap<TensorId, f64>, i: usize| {
        known.get(&candidates[i]).map(|&e| e > tolerance)
    };
    let mut hi = candidates.len() - 1;
    let mut lo: Option<usize> = None;
    loop {
        // What is known narrows the range: the first known wrong below `hi`, and the
        // last known right below that. Every position between `lo` and `hi` is unknown.
        let start = lo.map_or(0, |l| l + 1);
        if let Some(b) = (start..hi).find(|&i| bad(&known, i) == Some(true)) {
            hi = b;
        }
        if let Some(r) = (start..hi).rev().find(|&i| bad(&known, i) == Some(false)) {
            lo = Some(r);
        }
        let start = lo.map_or(0, |l| l + 1);
        let record = |asked: &[TensorId], round: Round, known: &mut HashMap<_, _>| {
            let any_bad = round.errors.iter().any(|&e| e > tolerance);
            for (&t, e) in asked.iter().zip(round.errors) {
                known.insert(t, e);
            }
            !round.output_wrong && !any_bad
        };
        if start < hi {
            let asked: Vec<TensorId> = spread(start, hi, probes)
                .into_iter()
                .map(|i| candidates[i])
                .collect();
            let round = measure(&asked)?;
            if record(&asked, round, &mut known) {
                return Ok(Found::Vanished {
                    after: lo.map(|l| candidates[l]),
                    upto: candidates[hi],
                });
            }
            continue;
        }
        // `hi` follows a right tensor (or the inputs): are all its inputs right?
        let t = candidates[hi];
        let inputs = inputs_of(t);
        let unknown: Vec<TensorId> = inputs
            .iter()
            .copied()
            .filter(|i| !known.contains_key(i))
            .collect();
        if !unknown.is_empty() {
            let mut asked = unknown;
            asked.push(t);
            let round = measure(&asked)?;
            if record(&asked, round, &mut known) {
                return Ok(Found::Vanished {
                    after: lo.map(|l| candidates[l]),
                    upto: t,
                });
            }
        }
        let wrong_input = inputs
            .iter()
            .filter(|i| known[i] > tolerance)
            .min_by_key(|i| position.get(i).copied().unwrap_or(usize::MAX));
        if let Some(&i) = wrong_input
            && let Some(&p) = position.get(&i)
        {
            hi = p;
            lo = None;
            continue;
        }
        if known[&t] <= tolerance {
            return Ok(Found::Vanished {
                after: lo.map(|l| candidates[l]),
                upto: t,
            });
        }
        return Ok(Found::Node {
            tensor: t,
            error: known[&t],
            inputs: inputs.iter().map(|&i| (i, known[&i])).collect(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_graph::GraphBuilder;
    use weft_ir::dtype::DType;

    /// A fake model: tensor `i` is wrong where `wrong` says, reads `reads[i]`; each
    /// compile is counted.
    struct Fake {
        wrong: Vec<bool>,
        reads: Vec<Vec<usize>>,
        compiles: usize,
    }

    fn search(f: &mut Fake, probes: usize) -> Found {
        let n = f.wrong.len();
        let candidates: Vec<TensorId> = (0..n).map(TensorId).collect();
        let reads = f.reads.clone();
        let inputs_of = move |t: TensorId| reads[t.0].iter().map(|&i| TensorId(i)).collect();
        let wrong = f.wrong.clone();
        let compiles = &mut f.compiles;
        let mut measure = |asked: &[TensorId]| -> Result<Round, ()> {
            assert!(asked.len() <= probes + 3, "{asked:?}");
            *compiles += 1;
            Ok(Round {
                errors: asked
                    .iter()
                    .map(|t| if wrong[t.0] { 0.5 } else { 1e-7 })
                    .collect(),
                output_wrong: true,
            })
        };
        bisect(&candidates, 0.5, 1e-3, probes, &inputs_of, &mut measure).unwrap()
    }

    fn chain(n: usize, first_wrong: usize) -> Fake {
        Fake {
            wrong: (0..n).map(|i| i >= first_wrong).collect(),
            reads: (0..n)
                .map(|i| if i == 0 { vec![] } else { vec![i - 1] })
                .collect(),
            compiles: 0,
        }
    }

    #[test]
    fn a_chain_is_bisected_in_a_logarithmic_number_of_compiles() {
        for probes in [1, 2, 8] {
            for first in [0, 1, 37, 98, 99] {
                let mut f = chain(100, first);
                let found = search(&mut f, probes);
                let Found::Node { tensor, inputs, .. } = found else {
                    panic!("{found:?}")
                };
                assert_eq!(tensor, TensorId(first), "probes {probes}");
                if first > 0 {
                    assert_eq!(inputs, vec![(TensorId(first - 1), 1e-7)]);
                }
                // ⌈log_{k+1} 100⌉ rounds, the inputs of a chain's node measured already.
                let bound = (100f64.ln() / ((probes + 1) as f64).ln()).ceil() as usize;
                assert!(f.compiles <= bound, "{probes}: {} > {bound}", f.compiles);
            }
        }
    }

    /// An error masked on the way (a ReLU that clips it) reappears through a skip: the
    /// search lands on the node reading the skip, sees that input wrong, and starts
    /// again below it.
    #[test]
    fn an_error_masked_on_the_way_is_found_where_it_began() {
        let mut f = Fake {
            wrong: vec![
                false, false, false, true, false, false, false, true, true, true,
            ],
            reads: vec![
                vec![],
                vec![0],
                vec![1],
                vec![2],
                vec![3],
                vec![4],
                vec![5],
                vec![3, 6],
                vec![7],
                vec![8],
            ],
            compiles: 0,
        };
        let found = search(&mut f, 1);
        assert_eq!(
            found,
            Found::Node {
                tensor: TensorId(3),
                error: 0.5,
                inputs: vec![(TensorId(2), 1e-7)]
            }
        );
    }

    #[test]
    fn a_disagreement_that_vanishes_when_tensors_are_stored_is_said_so() {
        let candidates: Vec<TensorId> = (0..10).map(TensorId).collect();
        let mut measure = |asked: &[TensorId]| -> Result<Round, ()> {
            Ok(Round {
                errors: vec![0.0; asked.len()],
                output_wrong: false,
            })
        };
        let found = bisect(&candidates, 0.5, 1e-3, 4, &|_| vec![], &mut measure).unwrap();
        assert!(matches!(found, Found::Vanished { after: None, upto } if upto == TensorId(9)));
    }

    #[test]
    fn spread_splits_the_range_evenly() {
        assert_eq!(spread(0, 3, 8), vec![0, 1, 2]);
        assert_eq!(spread(0, 9, 1), vec![4]);
        assert_eq!(spread(10, 19, 2), vec![12, 15]);
        let picks = spread(0, 1000, 8);
        assert_eq!(picks.len(), 8);
        assert!(picks.windows(2).all(|w| w[1] - w[0] >= 110), "{picks:?}");
    }

    /// An ONNX node weft made into two (a step `y::t` and `y`): one unit, reading what
    /// the step reads; only `y` is a candidate.
    #[test]
    fn an_onnx_node_of_several_weft_nodes_is_one_unit() {
        let mut b = GraphBuilder::new("g");
        let x = b.input("x", &[4], DType::F32);
        let a = b.relu("a", x).unwrap();
        let step = b.relu("y::t", a).unwrap();
        let y = b.add("y", step, x).unwrap();
        let z = b.relu("z", y).unwrap();
        b.output(z);
        let g = b.finish().unwrap();
        let twin = |n: &str| !n.contains("::");
        let names = |ts: &[TensorId]| -> Vec<String> {
            ts.iter().map(|&t| g.tensor(t).name.clone()).collect()
        };
        assert_eq!(names(&candidates(&g, z, &twin)), ["a", "y", "z"]);
        let u = unit(&g, y, &twin);
        assert_eq!(u.nodes.len(), 2);
        assert_eq!(names(&u.inputs), ["a", "x"]);
        let (exposed, at) = exposing(&g, &[y, z]);
        assert_eq!(at, vec![1, 0]);
        assert_eq!(exposed.outputs, vec![z, y]);
    }
}
