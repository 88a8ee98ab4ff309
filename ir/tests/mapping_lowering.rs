//! A task mapping in the Func IR: a loop statement that lowering expands into ordinary
//! loops. Seed 002's cooperative load: a 64×8 tile of A copied by 128 threads with
//! `repeat(4, 1) * spatial(16, 8)`, each thread loading 4 elements.

use rand::{Rng, SeedableRng};
use weft_ir::data::{Arg, TensorData};
use weft_ir::expr::{Buffer, Expr, Scope, ThreadAxis, Var};
use weft_ir::func::{
    Block, BlockId, BlockRealize, BlockVar, For, ForKind, Func, IterKind, MappingLoop, Param, Stmt,
};
use weft_ir::kernel::KStmt;
use weft_ir::mapping::{repeat, spatial};
use weft_ir::prelude::DType;
use weft_ir::{interp, lower::lower};

/// `B[i, k] = A[i, k] * 2` for a 64×8 tile, tasks assigned by the mapping to threadIdx.x.
fn tile_copy() -> Func {
    let a = Buffer::new("A", vec![64, 8], DType::F32, Scope::Global);
    let b = Buffer::new("B", vec![64, 8], DType::F32, Scope::Global);
    let (i, k) = (Var::index("i"), Var::index("k"));
    let (vi, vk) = (Var::index("vi"), Var::index("vk"));
    let block = Stmt::Block(Box::new(BlockRealize {
        bindings: vec![i.expr(), k.expr()],
        predicate: Expr::Bool(true),
        block: Block {
            id: BlockId::fresh(),
            name: "B".into(),
            iter_vars: vec![
                BlockVar {
                    var: vi.clone(),
                    extent: 64,
                    kind: IterKind::Spatial,
                },
                BlockVar {
                    var: vk.clone(),
                    extent: 8,
                    kind: IterKind::Spatial,
                },
            ],
            init: None,
            body: Stmt::Store {
                buffer: b.clone(),
                indices: vec![vi.expr(), vk.expr()],
                value: a.load(vec![vi.expr(), vk.expr()]) * Expr::f32(2.0),
            },
        },
    }));
    let tx = Var::index("tx");
    let mapping = Stmt::Mapping(Box::new(MappingLoop {
        mapping: repeat(&[4, 1]) * spatial(&[16, 8]),
        worker: tx.expr(),
        task_vars: vec![i, k],
        body: block,
    }));
    Func {
        name: "tile_copy".into(),
        params: vec![Param::Buffer(a), Param::Buffer(b)],
        allocs: vec![],
        kernel_hints: vec![],
        body: Stmt::For(Box::new(For {
            var: tx,
            extent: 128,
            kind: ForKind::Bound(ThreadAxis::ThreadIdxX),
            body: mapping,
        })),
    }
}

#[test]
fn mapping_loop_prints_lowers_and_runs() {
    let f = tile_copy();
    let printed = f.to_string();
    assert!(
        printed.contains("for i, k in T.task_mapping(repeat(4, 1) * spatial(16, 8), worker=tx):"),
        "{printed}"
    );
    let l = lower(&f).unwrap();
    let k = &l.kernels[0];
    assert_eq!(k.block, [128, 1, 1]);
    // Expanded: no mapping node is left, and the repeat became a loop of 4.
    let mut mappings = 0;
    let mut loops = Vec::new();
    k.body.visit(&mut |s| match s {
        KStmt::Mapping(_) => mappings += 1,
        KStmt::For { extent, .. } => loops.push(*extent),
        _ => {}
    });
    assert_eq!(mappings, 0);
    assert_eq!(loops, [4]);
    let mut r = rand::rngs::StdRng::seed_from_u64(3);
    let xs: Vec<f32> = (0..512).map(|_| r.random()).collect();
    let mut args = vec![
        Arg::Tensor(TensorData::F32(xs.clone())),
        Arg::Tensor(TensorData::poisoned(DType::F32, 512)),
    ];
    interp::run(&l, &mut args).unwrap();
    let Arg::Tensor(TensorData::F32(out)) = &args[1] else {
        panic!()
    };
    for (o, x) in out.iter().zip(&xs) {
        assert_eq!(*o, x * 2.0);
    }
}
