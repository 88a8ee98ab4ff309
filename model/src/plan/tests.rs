//! The plan's tests: slots over the kernel order, refusals naming what needs memory.

use super::*;
use ndarray::{ArrayD, IxDyn};
use weft_graph::GraphBuilder;
use weft_graph::partition::{Partition, partition};

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
    let err = crate::executable::fits(&g, &plan, cpu.as_ref(), Some(need.bytes - 1)).unwrap_err();
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

/// `t ← relu(t) + t + 2`: one group, which reads `t` twice (so `t` is stored).
fn step(b: &mut GraphBuilder, name: &str, t: TensorId, two: TensorId) -> TensorId {
    let u = b.relu(format!("{name}_r"), t).unwrap();
    let v = b.add(format!("{name}_a"), u, t).unwrap();
    b.add(format!("{name}_b"), v, two).unwrap()
}

/// A step of `x`, three steps beside each other from it joined (their slots free
/// after), a step, then `width` branches of one step each reading that step's output
/// `s` — joined at the end into a running sum, or (`join_each`) each added into it
/// right after it. Returns the graph and the branches' outputs.
fn fan(width: usize, join_each: bool) -> (Graph, Vec<TensorId>) {
    fan_of(width, join_each, 1000)
}

/// [`fan`] over tensors of `len` elements.
fn fan_of(width: usize, join_each: bool, len: usize) -> (Graph, Vec<TensorId>) {
    let mut b = GraphBuilder::new("fan");
    let x = b.input("x", &[len], DType::F32);
    let two = b.weight("two", ArrayD::from_elem(IxDyn(&[1]), 2.0));
    let join = |b: &mut GraphBuilder, name: &str, sum: TensorId, t: TensorId| {
        // Each read twice: both stored, not folded into the sum's kernel.
        let s = b.add(format!("{name}_j"), sum, t).unwrap();
        let s = b.add(format!("{name}_k"), s, t).unwrap();
        b.add(format!("{name}_l"), s, sum).unwrap()
    };
    let c0 = step(&mut b, "c0", x, two);
    let spread: Vec<TensorId> = (0..3)
        .map(|i| step(&mut b, &format!("p{i}"), c0, two))
        .collect();
    let mut c1 = join(&mut b, "q1", spread[0], spread[1]);
    c1 = join(&mut b, "q2", c1, spread[2]);
    c1 = join(&mut b, "q0", c1, spread[0]);
    let s = step(&mut b, "c2", c1, two);
    let mut branches = Vec::new();
    let mut sum = s;
    for i in 0..width {
        let br = step(&mut b, &format!("b{i}"), s, two);
        branches.push(br);
        if join_each {
            sum = join(&mut b, &format!("j{i}"), sum, br);
        }
    }
    if !join_each {
        for (i, &br) in branches.iter().enumerate() {
            sum = join(&mut b, &format!("j{i}"), sum, br);
        }
    }
    b.output(sum);
    (b.finish().unwrap(), branches)
}

/// The position of the group writing `t` (the partition's order).
fn writer(p: &Partition, t: TensorId) -> usize {
    p.groups
        .iter()
        .position(|gr| gr.output == t)
        .unwrap_or_else(|| panic!("no group writes {t:?}: {p:?}"))
}

/// Whether `t`'s slot held a tensor written before it.
fn reused(g: &Graph, p: &Partition, plan: &Plan, t: TensorId) -> bool {
    let at = writer(p, t);
    (0..g.tensors.len()).map(TensorId).any(|u| {
        u != t
            && plan.homes.get(&u) == plan.homes.get(&t)
            && p.groups
                .iter()
                .position(|gr| gr.output == u)
                .is_some_and(|w| w < at)
    })
}

#[test]
fn only_a_branch_that_waits_for_nothing_gets_a_buffer_no_kernel_used() {
    // Branch 0 is the first kernel to read the chain's end, which the kernel before it
    // wrote: it waits anyway, and may reuse a slot. Branches 1 and 2 read what branch 0
    // already read: unwaited, unless their output lands in a used slot.
    let (g, branches) = fan(3, false);
    let p = partition(&g);
    let order: Vec<usize> = (0..p.groups.len()).collect();
    let ones = vec![1; p.groups.len()];
    let always = Plan::reusing(&g, &p, &order, &ones, Reuse::Always);
    let waiting = Plan::reusing(&g, &p, &order, &ones, Reuse::Waiting);
    let unwaited = waits::unwaited(&g, &p, &order, &ones, &always.homes);
    let at: Vec<usize> = branches.iter().map(|&t| writer(&p, t)).collect();
    assert!(!unwaited.contains(&at[0]), "{unwaited:?} {at:?}");
    assert!(
        unwaited.contains(&at[1]) && unwaited.contains(&at[2]),
        "{unwaited:?} {at:?}"
    );
    // The first kernel waits for nothing (it reads the graph's input); nor do the
    // second and third steps from `c0`: five in all.
    assert!(unwaited.contains(&0), "{unwaited:?}");
    assert_eq!(unwaited.len(), 1 + 2 + 2, "{unwaited:?}");
    assert!(reused(&g, &p, &always, branches[1]), "{:?}", always.homes);
    for (i, &t) in branches.iter().enumerate() {
        assert_eq!(
            reused(&g, &p, &waiting, t),
            i == 0,
            "branch {i}: {:?}",
            waiting.homes
        );
    }
    assert!(waiting.slot_bytes() <= waiting_cap(always.slot_bytes()));
    // Never: a slot per stored intermediate.
    let never = Plan::reusing(&g, &p, &order, &ones, Reuse::Never);
    let stored = never
        .homes
        .values()
        .filter(|h| matches!(h, Home::Slot(_)))
        .count();
    assert_eq!(never.slots.len(), stored);
    assert!(never.slots.len() > waiting.slots.len());
}

#[test]
fn a_group_of_several_kernels_waits_within_itself() {
    // Branch 1 launching two kernels (a split reduction and its sum): its output's writer
    // waits for its first kernel, so the output may reuse a slot.
    let (g, branches) = fan(3, false);
    let p = partition(&g);
    let order: Vec<usize> = (0..p.groups.len()).collect();
    let mut kernels = vec![1; p.groups.len()];
    kernels[writer(&p, branches[1])] = 2;
    let waiting = Plan::reusing(&g, &p, &order, &kernels, Reuse::Waiting);
    assert!(reused(&g, &p, &waiting, branches[1]), "{:?}", waiting.homes);
    assert!(
        !reused(&g, &p, &waiting, branches[2]),
        "{:?}",
        waiting.homes
    );
}

#[test]
fn a_chain_waits_everywhere_and_keeps_its_two_slots() {
    let (g, _) = fan(1, false);
    let p = partition(&g);
    let order: Vec<usize> = (0..p.groups.len()).collect();
    let ones = vec![1; p.groups.len()];
    let always = Plan::reusing(&g, &p, &order, &ones, Reuse::Always);
    let waiting = Plan::reusing(&g, &p, &order, &ones, Reuse::Waiting);
    assert_eq!(waiting.slots, always.slots);
    assert_eq!(waiting.homes, always.homes);
}

#[test]
fn unwaited_writers_stay_within_the_cap() {
    // Sixteen branches of 16 MiB each, each unwaited but the first: a buffer each would
    // be more than the cap (twice what reuse takes, or 64 MiB more); the cap holds and
    // the branches past it reuse slots. Nothing is allocated: the plan only counts.
    let (g, branches) = fan_of(16, true, 4 << 20);
    let p = partition(&g);
    let order: Vec<usize> = (0..p.groups.len()).collect();
    let ones = vec![1; p.groups.len()];
    let always = Plan::reusing(&g, &p, &order, &ones, Reuse::Always);
    let waiting = Plan::reusing(&g, &p, &order, &ones, Reuse::Waiting);
    let never = Plan::reusing(&g, &p, &order, &ones, Reuse::Never);
    let cap = waiting_cap(always.slot_bytes());
    assert_eq!(cap, always.slot_bytes() + WAITING_ALLOWANCE);
    assert!(never.slot_bytes() > cap, "{} {cap}", never.slot_bytes());
    assert!(
        waiting.slot_bytes() <= cap,
        "{} {cap}",
        waiting.slot_bytes()
    );
    assert!(
        !reused(&g, &p, &waiting, branches[1]),
        "{:?}",
        waiting.homes
    );
    assert!(branches.iter().any(|&t| reused(&g, &p, &waiting, t)));
    // Small tensors: the same fan fits whole, a buffer for every unwaited branch.
    let (g, branches) = fan(16, true);
    let p = partition(&g);
    let waiting = Plan::reusing(&g, &p, &order, &ones, Reuse::Waiting);
    for &t in &branches[1..] {
        assert!(!reused(&g, &p, &waiting, t), "{:?}", waiting.homes);
    }
}
