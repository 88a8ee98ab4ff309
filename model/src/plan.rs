//! Memory planning: every stored intermediate tensor gets a slot (one device buffer),
//! and a slot is reused by a later tensor of the same dtype once the last kernel reading
//! its tensor has run — liveness over the kernel order, best fit by size. Graph inputs
//! and outputs have buffers of their own (an output must survive the run); weights are
//! uploaded once.

use std::collections::HashMap;

use weft_graph::partition::{Partition, in_place};
use weft_graph::{Graph, TensorId};
use weft_ir::dtype::DType;

use crate::error::MemoryNeed;

/// Where a tensor lives on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    /// A graph input, by position.
    Input(usize),
    /// A weight or constant (uploaded once).
    Weight,
    /// A graph output, by position (its own buffer).
    Output(usize),
    /// A reused intermediate buffer.
    Slot(usize),
    /// The buffer of this graph input, which the tensor's node updates in place (a KV
    /// cache: [`weft_graph::partition::in_place`]); a run leaves the input updated.
    InPlace(TensorId),
}

/// One reused buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    pub dtype: DType,
    /// Elements: the largest tensor it holds.
    pub len: usize,
}

/// The buffer plan of a partitioned graph.
#[derive(Clone, Debug)]
pub struct Plan {
    pub homes: HashMap<TensorId, Home>,
    pub slots: Vec<Slot>,
    /// Bytes of the intermediates without reuse (what planning saved is the difference).
    pub unplanned_bytes: usize,
}

impl Plan {
    /// Plans the buffers of `partition`'s kernels over `g`, each group's kernels run in
    /// partition order.
    pub fn new(g: &Graph, partition: &Partition) -> Plan {
        let order: Vec<usize> = (0..partition.groups.len()).collect();
        Plan::ordered(g, partition, &order)
    }

    /// [`Plan::new`] where group `i`'s kernels run at position `positions[i]`: groups at
    /// the same position run in one kernel, at once (`crate::horizontal`), so a buffer
    /// one of them reads is not free for another's output there.
    pub fn ordered(g: &Graph, partition: &Partition, positions: &[usize]) -> Plan {
        let mut homes: HashMap<TensorId, Home> = HashMap::new();
        for (i, &t) in g.inputs.iter().enumerate() {
            homes.insert(t, Home::Input(i));
        }
        for (i, &t) in g.outputs.iter().enumerate() {
            homes.entry(t).or_insert(Home::Output(i));
        }
        for (i, t) in g.tensors.iter().enumerate() {
            if t.is_constant() {
                homes.insert(TensorId(i), Home::Weight);
            }
        }
        for gr in &partition.groups {
            if in_place(g, gr.root) {
                let input = g.nodes[gr.root.0].inputs[0];
                homes.insert(gr.output, Home::InPlace(input));
            }
        }
        // Each stored tensor: the kernel that first writes it and the last that reads it.
        let mut first: HashMap<TensorId, usize> = HashMap::new();
        let mut last: HashMap<TensorId, usize> = HashMap::new();
        // A slice of a Concat is its buffer's: the buffer lives from the first kernel
        // writing any slice to the last reading any (a dense block's whole buffer lives
        // until its transition has read it).
        for (i, gr) in partition.groups.iter().enumerate() {
            let k = positions[i];
            let stored = partition.home(gr.output);
            let f = first.entry(stored).or_insert(k);
            *f = (*f).min(k);
            let l = last.entry(stored).or_insert(k);
            *l = (*l).max(k);
            for &t in &gr.inputs {
                let l = last.entry(partition.home(t)).or_insert(k);
                *l = (*l).max(k);
            }
        }
        let mut order: Vec<TensorId> = first
            .keys()
            .copied()
            .filter(|t| !homes.contains_key(t))
            .collect();
        order.sort_by_key(|t| (first[t], t.0));
        let mut slots: Vec<Slot> = Vec::new();
        // Per slot: the kernel after which it is free again.
        let mut busy_until: Vec<usize> = Vec::new();
        let mut unplanned = 0;
        for t in order {
            let tensor = g.tensor(t);
            let (len, dtype) = (tensor.numel(), tensor.dtype);
            unplanned += len * dtype.bytes();
            let start = first[&t];
            // A slot whose last reader ran before this tensor's writer, same dtype: the
            // smallest that fits, else the largest (grown).
            let free: Vec<usize> = (0..slots.len())
                .filter(|&s| busy_until[s] < start && slots[s].dtype == dtype)
                .collect();
            let fit = free
                .iter()
                .copied()
                .filter(|&s| slots[s].len >= len)
                .min_by_key(|&s| slots[s].len)
                .or_else(|| free.iter().copied().max_by_key(|&s| slots[s].len));
            let s = match fit {
                Some(s) => {
                    slots[s].len = slots[s].len.max(len);
                    s
                }
                None => {
                    slots.push(Slot { dtype, len });
                    busy_until.push(0);
                    slots.len() - 1
                }
            };
            busy_until[s] = last[&t];
            homes.insert(t, Home::Slot(s));
        }
        Plan {
            homes,
            slots,
            unplanned_bytes: unplanned,
        }
    }

    /// Bytes of the reused intermediate buffers.
    pub fn slot_bytes(&self) -> usize {
        self.slots.iter().map(|s| s.len * s.dtype.bytes()).sum()
    }

    /// Peak device bytes of a run: weights, inputs, outputs and the slots.
    pub fn peak_bytes(&self, g: &Graph) -> usize {
        let own: usize = self
            .homes
            .iter()
            .filter(|(_, h)| !matches!(h, Home::Slot(_) | Home::InPlace(_)))
            .map(|(&t, _)| g.tensor(t).numel() * g.tensor(t).dtype.bytes())
            .sum();
        own + self.slot_bytes()
    }

    /// What a run needs of the device's memory ([`Plan::peak_bytes`] in its parts) and
    /// the few largest tensors: what a refusal names.
    pub fn need(&self, g: &Graph) -> MemoryNeed {
        let bytes = |t: TensorId| (g.tensor(t).numel() * g.tensor(t).dtype.bytes()) as u64;
        let (mut weights, mut io) = (0, 0);
        let mut all: Vec<(String, u64, &'static str)> = Vec::new();
        for (&t, home) in &self.homes {
            let what = match home {
                Home::Weight => {
                    weights += bytes(t);
                    "a weight"
                }
                Home::Input(_) => {
                    io += bytes(t);
                    "an input"
                }
                Home::Output(_) => {
                    io += bytes(t);
                    "an output"
                }
                Home::Slot(_) => "an intermediate",
                // Its input's bytes, counted once there.
                Home::InPlace(_) => continue,
            };
            all.push((g.tensor(t).name.clone(), bytes(t), what));
        }
        // Largest first; among equals, by name, so that the message is stable.
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        all.truncate(3);
        MemoryNeed {
            bytes: self.peak_bytes(g) as u64,
            weights,
            io,
            intermediates: self.slot_bytes() as u64,
            largest: all,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{ArrayD, IxDyn};
    use weft_graph::GraphBuilder;
    use weft_graph::partition::partition;

    #[test]
    fn a_chain_reuses_two_buffers() {
        // t ← relu(t) + t + 2, five times: each t is read by two nodes, so it is
        // stored, and only by the next step's kernel, so two slots alternate.
        let mut b = GraphBuilder::new("chain");
        let x = b.input("x", &[1000], DType::F32);
        let two = b.weight("two", ArrayD::from_elem(IxDyn(&[1000]), 2.0));
        let mut t = x;
        for i in 0..5 {
            let u = b.relu(format!("r{i}"), t).unwrap();
            let v = b.add(format!("a{i}"), u, t).unwrap();
            t = b.add(format!("b{i}"), v, two).unwrap();
        }
        b.output(t);
        let g = b.finish().unwrap();
        let p = partition(&g);
        let plan = Plan::new(&g, &p);
        assert_eq!(plan.slots.len(), 2, "{:?}", plan.slots);
        assert!(plan.unplanned_bytes > plan.slot_bytes());
        // No two tensors alive at once share a slot: checked by running in the compiled
        // model's tests; here, the output has its own buffer.
        assert_eq!(plan.homes[&g.outputs[0]], Home::Output(0));
    }

    #[test]
    fn groups_run_in_one_kernel_never_share_a_slot() {
        // a ← relu(x), e ← (a + y) + (a + z), then c ← relu(w), each stored (two
        // readers): in partition order c may take a's slot (a's last reader, e's
        // kernel, ran); run in a's kernel (the horizontal fusion's position), a is live
        // there and c needs a slot of its own.
        let mut bld = GraphBuilder::new("joined");
        let [x, y, z, w] = ["x", "y", "z", "w"].map(|n| bld.input(n, &[100], DType::F32));
        let a = bld.relu("a", x).unwrap();
        let b1 = bld.add("b1", a, y).unwrap();
        let b2 = bld.add("b2", a, z).unwrap();
        let e = bld.add("e", b1, b2).unwrap();
        let c = bld.relu("c", w).unwrap();
        let f = bld.add("f", e, c).unwrap();
        let k = bld.add("k", f, e).unwrap();
        let h = bld.add("h", k, c).unwrap();
        bld.output(h);
        let g = bld.finish().unwrap();
        let p = partition(&g);
        let group = |name: &str| {
            p.groups
                .iter()
                .position(|gr| gr.nodes().any(|n| g.nodes[n.0].name == name))
                .unwrap_or_else(|| panic!("{name} in no group: {p:?}"))
        };
        let (ga, gc) = (group("a"), group("c"));
        assert!(ga < group("e") && group("e") < gc, "{p:?}");
        let (ta, tc) = (p.groups[ga].output, p.groups[gc].output);
        let plain = Plan::new(&g, &p);
        assert_eq!(plain.homes[&ta], plain.homes[&tc], "{:?}", plain.homes);
        let mut positions: Vec<usize> = (0..p.groups.len()).collect();
        positions[gc] = ga;
        let joined = Plan::ordered(&g, &p, &positions);
        assert_ne!(joined.homes[&ta], joined.homes[&tc], "{:?}", joined.homes);
    }

    #[test]
    fn a_plan_larger_than_the_device_is_refused_naming_its_largest_tensors() {
        let mut b = GraphBuilder::new("mlp");
        let x = b.input("x", &[64, 8], DType::F32);
        let w = b.weight("w", ArrayD::from_elem(IxDyn(&[8, 16]), 1.0));
        let h = b.node("fc", weft_graph::Op::MatMul, &[x, w]).unwrap();
        let y = b.relu("relu", h).unwrap();
        b.output(y);
        let g = b.finish().unwrap();
        let plan = Plan::new(&g, &partition(&g));
        let need = plan.need(&g);
        // x: 2 KiB, w: 512 B, y: 4 KiB (h is fused into relu's kernel or a slot).
        assert_eq!((need.weights, need.io), (512, 6144));
        assert_eq!(need.largest[0], ("relu".to_string(), 4096, "an output"));
        assert_eq!(need.bytes, plan.peak_bytes(&g) as u64);
        let target = weft_runtime::Target::parse("cpu").unwrap();
        let cpu = weft_runtime::open(&target).unwrap();
        let err =
            crate::executable::fits(&g, &plan, cpu.as_ref(), Some(need.bytes - 1)).unwrap_err();
        let text = err.to_string();
        for want in [
            "needs 6.5 KiB",
            "`relu` 4.0 KiB (an output)",
            "`x` 2.0 KiB (an input)",
            "WEFT_DEVICE_MEMORY",
        ] {
            assert!(text.contains(want), "`{want}` not in: {text}");
        }
        assert!(crate::executable::fits(&g, &plan, cpu.as_ref(), Some(need.bytes)).is_ok());
    }
}
