//! Hand-built kernels that place their own wait for the kernel before them
//! (programmatic dependent launch): what the emitters' placement and refusal tests run.

use weft_ir::dtype::DType;
use weft_ir::expr::{Buffer, Var};
use weft_ir::kernel::{Access, GridControl, KStmt, Kernel};

use super::{bx, global, let_, load, param, store, tx, vecadd};

/// [`vecadd`] waiting for the previous kernel where it says (programmatic dependent
/// launch): each thread prefetches its element of `B` (a weight: no kernel before it
/// writes `B`) into L2, waits, adds, and lets the next kernel launch.
pub fn prefetch_vecadd() -> Kernel {
    prefetch_vecadd_with(|_| Vec::new())
}

/// [`prefetch_vecadd`] with `before_wait([A, B, C])` placed between the prefetch and the
/// wait: what the emitters' refusal tests put there (a load, a store, a barrier).
pub fn prefetch_vecadd_with(before_wait: impl FnOnce(&[Buffer; 3]) -> Vec<KStmt>) -> Kernel {
    let mut k = vecadd();
    k.name = "prefetch_vecadd".into();
    let (a, b, c) = (
        global("A", 1024, DType::F32),
        global("B", 1024, DType::F32),
        global("C", 1024, DType::F32),
    );
    k.params = vec![
        param(&a, Access::Read),
        param(&b, Access::Read),
        param(&c, Access::Write),
    ];
    let i = Var::index("i");
    let mut items = vec![KStmt::Prefetch {
        buffer: b.clone(),
        index: i.expr(),
        bytes: 0,
    }];
    items.extend(before_wait(&[a.clone(), b.clone(), c.clone()]));
    items.extend([
        KStmt::Grid(GridControl::Wait),
        store(&c, i.expr(), load(&a, i.expr()) + load(&b, i.expr())),
        KStmt::Grid(GridControl::LaunchDependents),
    ]);
    k.body = let_(&i, bx() * 256 + tx(), KStmt::seq(items));
    k
}
