//! Matrix fragments in TVMScript's spelling (`T.tvm_load_matrix_sync`, ...).

use super::expr_to_string;
use crate::fragment::{FragOp, FragRef, Fragment};

/// `acc = T.alloc_fragment("accumulator", m=16, n=16, k=16, "float32", count=4)`.
pub(crate) fn fragment_decl(f: &Fragment) -> String {
    let s = f.shape();
    let layout = match f.role() {
        crate::fragment::FragRole::Accumulator | crate::fragment::FragRole::Rows => String::new(),
        _ => format!(", \"{}\"", f.layout().name()),
    };
    format!(
        "{} = T.alloc_fragment(\"{}\", m={}, n={}, k={}, \"{}\"{layout}, count={})",
        f.name(),
        f.role().name(),
        s.m,
        s.n,
        s.k,
        f.dtype().tvm_name(),
        f.count()
    )
}

fn tile(r: &FragRef) -> String {
    format!("{}[{}]", r.frag.name(), expr_to_string(&r.index))
}

/// One fragment operation as a line of TVMScript.
pub(crate) fn frag_op(op: &FragOp) -> String {
    let at = |buffer: &crate::expr::Buffer, origin: &[crate::expr::Expr]| {
        let idx: Vec<String> = origin.iter().map(expr_to_string).collect();
        format!("{}[{}]", buffer.name(), idx.join(", "))
    };
    match op {
        FragOp::Fill { dst, value } => {
            format!(
                "T.tvm_fill_fragment({}, {})",
                tile(dst),
                expr_to_string(value)
            )
        }
        FragOp::Map {
            dst,
            row,
            col,
            args,
            value,
        } => {
            let bound: Vec<String> = args
                .iter()
                .map(|(v, r)| format!(", {}={}", v.name(), tile(r)))
                .collect();
            format!(
                "T.frag_map({}, lambda {}, {}{}: {})",
                tile(dst),
                row.name(),
                col.name(),
                bound.concat(),
                expr_to_string(value)
            )
        }
        FragOp::RowReduce {
            dst,
            src,
            tiles,
            op,
        } => format!(
            "T.frag_row_reduce({}, \"{}\", {}, tiles={tiles})",
            tile(dst),
            op.name(),
            tile(src)
        ),
        FragOp::Convert { dst, src } => {
            format!("T.frag_convert({}, {})", tile(dst), tile(src))
        }
        FragOp::Load {
            dst,
            buffer,
            origin,
            stride,
        } => format!(
            "T.tvm_load_matrix_sync({}, {}, stride={stride}, \"{}\")",
            tile(dst),
            at(buffer, origin),
            dst.frag.layout().name()
        ),
        FragOp::Store {
            src,
            buffer,
            origin,
            stride,
        } => format!(
            "T.tvm_store_matrix_sync({}, {}, stride={stride})",
            tile(src),
            at(buffer, origin)
        ),
        FragOp::Mma { d, a, b, c } => format!(
            "T.tvm_mma_sync({}, {}, {}, {})",
            tile(d),
            tile(a),
            tile(b),
            tile(c)
        ),
        FragOp::WgMma { d, a, b } => {
            let boxes = match b.major {
                crate::tma::Major::Mn => format!(", boxes {} apart", b.box_elems),
                crate::tma::Major::K => String::new(),
            };
            format!(
                "T.ptx_wgmma({}, {} \"{}\", {} \"{}\"{boxes})",
                tile(d),
                at(&a.buffer, &a.origin),
                a.major.name(),
                at(&b.buffer, &b.origin),
                b.major.name()
            )
        }
        FragOp::WgFence => "T.ptx_wgmma_fence()".to_string(),
        FragOp::WgCommit => "T.ptx_wgmma_commit_group()".to_string(),
        FragOp::WgWait { pending } => format!("T.ptx_wgmma_wait_group({pending})"),
        FragOp::Tma {
            dst,
            origin,
            src,
            coords,
            rows,
            bar,
        } => format!(
            "T.ptx_tma_load({}, {}, rows={rows}, barrier={})",
            at(dst, origin),
            at(src, coords),
            barrier(bar)
        ),
        FragOp::BarInit { bar, arrivals } => {
            format!("T.ptx_mbarrier_init({}, arrivals={arrivals})", barrier(bar))
        }
        FragOp::BarExpect { bar, bytes } => format!(
            "T.ptx_mbarrier_arrive_expect_tx({}, bytes={bytes})",
            barrier(bar)
        ),
        FragOp::BarWait { bar, parity } => format!(
            "T.ptx_mbarrier_wait({}, parity={})",
            barrier(bar),
            expr_to_string(parity)
        ),
    }
}

fn barrier(b: &crate::tma::BarRef) -> String {
    format!("{}[{}]", b.bar.name(), expr_to_string(&b.index))
}
