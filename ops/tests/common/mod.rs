//! Fixtures shared by the `ops` test binaries. The NVIDIA Vulkan adapter's limits are
//! `weft_testkit`'s, re-exported here so that every binary names them the same way.

#[allow(dead_code)] // only the rule tests read sweeps
pub mod sweeps;

#[allow(dead_code)] // only the fp32 rule's test and fit read its data
pub mod rule_tiles;

use weft_ir::kernel::KStmt;

#[allow(unused_imports)] // not every test binary emits WGSL
pub use weft_testkit::devices::nvidia_vulkan_limits;

/// `s` without its barriers: what a kernel that forgot them would run (the interpreter
/// then reports the race the barriers prevented).
#[allow(dead_code)] // not every test binary removes barriers
pub fn strip_barriers(s: &KStmt) -> KStmt {
    s.rewrite(&mut |s| match s {
        KStmt::Seq(items) => KStmt::Seq(
            items
                .into_iter()
                .filter(|i| !matches!(i, KStmt::Barrier))
                .collect(),
        ),
        s => s,
    })
}
