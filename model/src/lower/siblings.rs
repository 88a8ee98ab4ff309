//! Which anchors could keep a reduction whole on Vulkan rather than split it: those with
//! a sibling (another anchor group that neither feeds them nor is fed by them: the
//! branches of an Inception block, a residual block's projection shortcut), those the
//! next dispatch does not read, or those with a short reduction — an A/B switch
//! ([`SWITCH`]), off by default.
//!
//! Why ask: a product split in parts for occupancy adds a summing kernel, and on
//! targets whose dispatches wait at pipeline barriers for what they use
//! ([`weft_codegen_common::TargetLimits::usage_barriers`], Vulkan) that kernel is a
//! dispatch of its own behind a barrier that waits for everything dispatched before it.
//! Where other work runs beside the product, the split might buy little and cost a
//! dispatch. What was measured (see [`SWITCH`]): true of GoogLeNet, whose products
//! whole ran 38 µs longer summed alone but the model 140 µs shorter; false of
//! Inception-v3, whose branch tails whole ran 9–10 µs longer each alone (17² 1×7 and 8²
//! 1×3 convolutions, 12–30 blocks) and the model 230 µs longer — no structural test
//! tried here tells the two apart (`docs/vulkan-small-convs.md`).

use weft_graph::Graph;
use weft_graph::partition::{Group, GroupKind};

/// Each node's ancestor groups among `marked` (group indices, numbered by their place
/// in `marked`), itself included where it is a marked group's root, as bitsets: the
/// graph's nodes come producers first, so one pass in order fills them.
fn ancestors(g: &Graph, groups: &[Group], marked: &[usize]) -> Vec<Vec<u64>> {
    let mut mark_of_node: Vec<Option<usize>> = vec![None; g.nodes.len()];
    for (a, &i) in marked.iter().enumerate() {
        mark_of_node[groups[i].root.0] = Some(a);
    }
    let words = marked.len().div_ceil(64);
    let producers = g.producers();
    let mut sets: Vec<Vec<u64>> = Vec::with_capacity(g.nodes.len());
    for (n, node) in g.nodes.iter().enumerate() {
        let mut set = vec![0u64; words];
        for t in &node.inputs {
            if let Some(p) = producers.get(t) {
                for (w, bits) in set.iter_mut().zip(&sets[p.0]) {
                    *w |= bits;
                }
            }
        }
        if let Some(a) = mark_of_node[n] {
            set[a / 64] |= 1 << (a % 64);
        }
        sets.push(set);
    }
    sets
}

/// Whether bit `a` of `set` is set.
fn has(set: &[u64], a: usize) -> bool {
    set[a / 64] >> (a % 64) & 1 == 1
}

/// For each group of `groups` (a partition of `g`), whether it is an anchor with a
/// sibling: an anchor group whose root is neither an ancestor nor a descendant of its
/// root in `g`'s dataflow. Non-anchor groups are `false`.
pub(crate) fn with_siblings(g: &Graph, groups: &[Group]) -> Vec<bool> {
    let roots: Vec<usize> = (0..groups.len())
        .filter(|&i| groups[i].kind == GroupKind::Anchor)
        .collect();
    let sets = ancestors(g, groups, &roots);
    let mut out = vec![false; groups.len()];
    for (a, &i) in roots.iter().enumerate() {
        let mine = &sets[groups[i].root.0];
        out[i] = roots
            .iter()
            .enumerate()
            .any(|(b, &j)| b != a && !has(mine, b) && !has(&sets[groups[j].root.0], a));
    }
    out
}

/// For each group of `groups`, whether it is an anchor that the group after it (in run
/// order) does not read, directly or through others: the two dispatches can run at the
/// same time where nothing else puts a barrier between them.
pub(crate) fn beside_the_next(g: &Graph, groups: &[Group]) -> Vec<bool> {
    let all: Vec<usize> = (0..groups.len()).collect();
    let sets = ancestors(g, groups, &all);
    (0..groups.len())
        .map(|i| {
            groups[i].kind == GroupKind::Anchor
                && groups
                    .get(i + 1)
                    .is_some_and(|next| !has(&sets[next.root.0], i))
        })
        .collect()
}

/// What of an anchor with siblings keeps its reduction whole where the rule would split
/// it, on targets whose dispatches wait at barriers for what they use (the rule's
/// `choose::whole_beside_siblings`; [`SWITCH`] sets it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Beside {
    /// Split as any other: no siblings, or the switch off.
    #[default]
    Split,
    /// Products over views (implicit GEMMs over gathered windows) at most `max_k` long
    /// whole.
    Views {
        /// The longest reduction kept whole.
        max_k: i64,
    },
    /// Every fp16 product at most `max_k` long whole, over stored operands (1×1
    /// convolutions) too.
    Every {
        /// The longest reduction kept whole.
        max_k: i64,
    },
}

/// Which anchors [`Asked::beside`] applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Among {
    /// Anchors with siblings ([`with_siblings`]).
    Siblings,
    /// Anchors the next group does not read ([`beside_the_next`]).
    Next,
    /// Every anchor.
    Every,
}

/// What [`SWITCH`] asks: what stays whole, and of which anchors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asked {
    /// What of an anchor stays whole.
    pub beside: Beside,
    /// Which anchors.
    pub among: Among,
}

impl Asked {
    /// What of each group of `groups` (a partition of `g`) the rule keeps whole: this
    /// setting's [`Beside`] for the anchors it names, [`Beside::Split`] for the rest.
    pub(crate) fn per_group(&self, g: &Graph, groups: &[Group]) -> Vec<Beside> {
        let named = match (self.beside, self.among) {
            (Beside::Split, _) => vec![false; groups.len()],
            (Beside::Views { .. } | Beside::Every { .. }, Among::Every) => {
                vec![true; groups.len()]
            }
            (Beside::Views { .. } | Beside::Every { .. }, Among::Siblings) => {
                with_siblings(g, groups)
            }
            (Beside::Views { .. } | Beside::Every { .. }, Among::Next) => {
                beside_the_next(g, groups)
            }
        };
        named
            .into_iter()
            .map(|n| if n { self.beside } else { Beside::Split })
            .collect()
    }
}

/// The environment variable that sets [`Asked`]: `0` (the default: split as any
/// other), `views` (products over views beside siblings) or `all` (every fp16 product
/// beside siblings), each with an optional `:K` (reductions at most K long), `next` or
/// `next:K` (every fp16 product the next group does not read), or `short:K` (every
/// fp16 product at most K long). Measured on an H200 through Vulkan (2026-12-02,
/// `measurements/h200-2026-12-02b`, calls 2–4), none is the default: each keeps
/// GoogLeNet's products whole to its gain at batch 1 (617 µs → 494 `views`, 420 `all`,
/// 446 `next`) and Inception-v3's and ResNet-50's to their loss (1.03 → 1.78, 1.79 and
/// 1.42 ms; 524 → 606, 602 and 594 µs); `short:576` and `next:576` move none by more than
/// 4% but ShuffleNetV2 at batch 8 (376 → 345 µs under `short:576`).
pub const SWITCH: &str = "WEFT_SPLIT_BESIDE";

/// What [`SWITCH`] takes, as its refusal says.
pub const VALUES: &str = "0 (the default: split as any other), views (products over views whole beside siblings) or all (every fp16 product), each with an optional :K (at most K long), next[:K] (every fp16 product the next group does not read) or short:K (every fp16 product at most K long, siblings or not)";

/// [`Asked`] as [`SWITCH`] sets it; `Err` with [`VALUES`] for a value it does not take.
pub fn asked() -> Result<Asked, &'static str> {
    let value = match std::env::var(SWITCH) {
        Err(_) => "0".to_string(),
        Ok(v) => v,
    };
    let (what, bound) = match value.split_once(':') {
        Some((w, k)) => match k.parse::<i64>() {
            Ok(k) if k > 0 => (w, Some(k)),
            _ => return Err(VALUES),
        },
        None => (value.as_str(), None),
    };
    let max_k = bound.unwrap_or(i64::MAX);
    let (beside, among) = match (what, bound) {
        ("0", None) => (Beside::Split, Among::Siblings),
        ("views", _) => (Beside::Views { max_k }, Among::Siblings),
        ("all", _) => (Beside::Every { max_k }, Among::Siblings),
        ("next", _) => (Beside::Every { max_k }, Among::Next),
        ("short", Some(_)) => (Beside::Every { max_k }, Among::Every),
        _ => return Err(VALUES),
    };
    Ok(Asked { beside, among })
}
