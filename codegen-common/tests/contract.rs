//! The lowering contract (`weft_codegen_common::contract::check_lowered`) on the
//! hand-built kernels: they keep it, and the mistakes it must catch are caught. (Moved
//! here from a unit test in `src/contract.rs`: the kernels are in weft-testkit, which a
//! unit test inside this crate cannot use.)

use weft_codegen_common::EmitError;
use weft_codegen_common::contract::check_lowered;
use weft_ir::dtype::DType;
use weft_ir::expr::{Buffer, Expr, Scope};
use weft_ir::kernel::{KStmt, KernelParam};
use weft_testkit::handmade;

#[test]
fn handmade_kernels_keep_the_contract() {
    for (name, k) in handmade::all() {
        assert!(check_lowered(&k, "test").is_ok(), "{name}");
    }
}

#[test]
fn empty_allocations_and_stray_vector_loads_are_invalid() {
    let mut k = handmade::window_sum();
    k.shared = vec![Buffer::new("A_shared", vec![0], DType::F32, Scope::Shared)];
    assert!(matches!(
        check_lowered(&k, "test"),
        Err(EmitError::Invalid { .. })
    ));

    let mut k = handmade::vecadd();
    let a = match &k.params[0] {
        KernelParam::Buffer { buffer, .. } => buffer.clone(),
        KernelParam::Scalar(_) => unreachable!("vecadd's first parameter is A"),
    };
    let vload = Expr::Load {
        buffer: a,
        indices: vec![Expr::int(0)],
        lanes: 4,
    };
    k.body = KStmt::Let {
        var: weft_ir::expr::Var::new("x", DType::F32),
        value: vload.clone() + Expr::f32(1.0),
        body: Box::new(KStmt::Seq(vec![])),
    };
    let err = check_lowered(&k, "test").unwrap_err().to_string();
    assert!(err.contains("inside an expression"), "{err}");
}

#[test]
fn unsupported_widths_name_the_backend() {
    let mut k = handmade::copy_lanes4();
    if let KStmt::Seq(items) = &mut k.body {
        for s in items {
            if let KStmt::Store { lanes, value, .. } = s {
                *lanes = 8;
                if let Expr::Load { lanes, .. } = value {
                    *lanes = 8;
                }
            }
        }
    }
    match check_lowered(&k, "WGSL") {
        Err(EmitError::Unsupported { backend, what, .. }) => {
            assert_eq!(backend, "WGSL");
            assert!(what.contains("8-lane"), "{what}");
        }
        other => panic!("{other:?}"),
    }
}
