//! The C-family kernel writer: statements, expressions and declarations, with the
//! dialect's tables filling in every spelling that differs.

use std::collections::{HashMap, HashSet};

use weft_ir::dtype::DType;
use weft_ir::expr::{BinOp, Buffer, Expr, Scope, UnOp};
use weft_ir::func::{AtomicAdd, GridControl};
use weft_ir::kernel::{KStmt, Kernel, KernelParam};

mod frag;

use super::{Dialect, Prec, binop_prec, needs_parens};
use crate::contract::{buffer_lanes, expand_sigmoid, used_builtins};
use crate::error::{EmitError, UnloweredNode};
use crate::names::{NameKey, Namer};
use crate::{Level, float_text};

/// The names a kernel's module-level items get, for the dialect's signature.
#[derive(Clone, Debug)]
pub struct KernelNames {
    /// The function's name (the kernel's name, sanitised; the runtime looks it up).
    pub kernel: String,
    /// One per `kernel.params` entry, in order.
    pub params: Vec<String>,
    /// One per `kernel.shared` entry.
    pub shared: Vec<String>,
    /// One per `kernel.locals` entry.
    pub locals: Vec<String>,
    /// One per [`Kernel::tensor_maps`] entry: the by-value parameters after `params`.
    pub tensor_maps: Vec<String>,
}

/// Declares the kernel's own name, its parameters, the cast-once builtins and its
/// allocations, in that order, and returns the namer for the body.
fn declare_items(reserved: &[&'static [&'static str]], kernel: &Kernel) -> (Namer, KernelNames) {
    let mut namer = Namer::new(reserved);
    let kernel_name = namer.declare(NameKey::Item("kernel"), &kernel.name);
    let params = kernel
        .params
        .iter()
        .map(|p| match p {
            KernelParam::Buffer { buffer, .. } => {
                namer.declare(NameKey::Buffer(buffer.id()), buffer.name())
            }
            KernelParam::Scalar(v) => namer.declare(NameKey::Var(v.id()), v.name()),
        })
        .collect();
    for axis in used_builtins(kernel) {
        namer.declare(NameKey::Builtin(axis), axis.var_name());
    }
    let mut alloc = |b: &Buffer| namer.declare(NameKey::Buffer(b.id()), b.name());
    let shared = kernel.shared.iter().map(&mut alloc).collect();
    let locals = kernel.locals.iter().map(&mut alloc).collect();
    for f in &kernel.fragments {
        namer.declare(NameKey::Buffer(f.id()), f.name());
    }
    for b in kernel.mbarriers() {
        namer.declare(NameKey::Buffer(b.id()), b.name());
    }
    let tensor_maps = kernel
        .tensor_maps()
        .iter()
        .enumerate()
        .map(|(i, m)| {
            namer.declare(
                NameKey::TensorMap(i),
                &format!("{}_map{}", m.buffer.name(), m.rows),
            )
        })
        .collect();
    let names = KernelNames {
        kernel: kernel_name,
        params,
        shared,
        locals,
        tensor_maps,
    };
    (namer, names)
}

/// The names `kernel` gets in `dialect` (its entry point is `names.kernel`).
pub fn kernel_names<D: Dialect>(dialect: &D, kernel: &Kernel) -> KernelNames {
    declare_items(dialect.reserved(), kernel).1
}

/// Writes `kernel` as one function in `dialect`: signature, cast-once thread indices,
/// allocations, body. The caller checks the lowering contract and limits first
/// ([`crate::contract::check_lowered`], [`crate::limits::check_limits`]) and writes the
/// prelude.
pub fn write_kernel<D: Dialect>(dialect: &D, kernel: &Kernel) -> Result<String, EmitError> {
    let folded = crate::fold::fold_indices(kernel);
    let kernel = &folded;
    let (namer, names) = declare_items(dialect.reserved(), kernel);
    let mut w = Writer {
        d: dialect,
        kernel,
        namer,
        out: String::new(),
        scopes: kernel
            .shared
            .iter()
            .map(|b| (b.id(), Scope::Shared))
            .chain(kernel.locals.iter().map(|b| (b.id(), Scope::Local)))
            .collect(),
        swizzled: crate::layout::swizzled_buffers(kernel),
    };
    w.out.push_str(&dialect.signature(kernel, &names));
    w.out.push_str(" {\n");
    let level = Level(1);
    // A kernel that places its own wait (after prefetches, `contract::check_grid_wait`)
    // waits there instead.
    if let Some(wait) = dialect.grid_dependency()
        && !kernel.waits_explicitly()
    {
        w.line(level, wait);
    }
    for axis in used_builtins(kernel) {
        let name = w.name(NameKey::Builtin(axis), axis.var_name())?;
        let ty = dialect.scalar_type(DType::I32);
        let src = dialect.cast(DType::I32, DType::U32, &dialect.builtin(axis));
        w.line(level, &format!("{ty} {name} = {src};"));
    }
    let lanes = buffer_lanes(kernel);
    let frags = dialect.fragments();
    if let Some(f) = kernel.fragments.first()
        && frags.is_none()
    {
        return Err(w.unsupported(format!(
            "matrix fragment `{}` ({} {}): {} has no matrix fragments",
            f.name(),
            f.role().name(),
            f.shape(),
            D::NAME
        )));
    }
    let tile_bufs = crate::contract::fragment_buffers(kernel);
    let swizzled = crate::layout::swizzled_buffers(kernel);
    let tile_align = frags.map_or(0, |f| f.tile_align());
    let align = |b: &Buffer| {
        if swizzled.contains(&b.id()) {
            return Some(weft_ir::tma::SWIZZLE_ALIGN);
        }
        let widest = lanes.get(&b.id()).and_then(|l| l.last().copied());
        let vector = widest
            .filter(|&l| l > 1)
            .map(|l| l * b.dtype().bytes() as u32);
        if tile_bufs.contains(&b.id()) {
            Some(vector.unwrap_or(0).max(tile_align))
        } else {
            vector
        }
    };
    let (offsets, _) = super::shared_offsets(kernel);
    if let Some(decl) = dialect.dynamic_shared(crate::layout::apart_bytes(kernel)) {
        w.line(level, &format!("{decl};"));
        for ((b, name), at) in kernel.shared.iter().zip(&names.shared).zip(offsets) {
            let ty = dialect.scalar_type(b.dtype());
            let base = super::DYNAMIC_SHARED;
            w.line(level, &format!("{ty}* {name} = ({ty}*)({base} + {at});"));
        }
    } else {
        for (b, name) in kernel.shared.iter().zip(&names.shared) {
            let ty = dialect.scalar_type(b.dtype());
            let decl = dialect.shared_decl(ty, name, b.numel(), align(b));
            w.line(level, &format!("{decl};"));
        }
    }
    for (b, name) in kernel.locals.iter().zip(&names.locals) {
        let decl = dialect.local_decl(dialect.scalar_type(b.dtype()), name, b.numel(), align(b));
        w.line(level, &format!("{decl};"));
    }
    let mbarriers = kernel.mbarriers();
    if let Some(b) = mbarriers.first() {
        let Some(decl) = frags.and_then(|f| f.mbarrier_decl("x", 1)) else {
            return Err(w.unsupported(format!(
                "mbarrier `{}`: {} has no mbarriers",
                b.name(),
                D::NAME
            )));
        };
        let _ = decl;
    }
    for b in &mbarriers {
        let name = w.name(NameKey::Buffer(b.id()), b.name())?;
        if let Some(decl) = frags.and_then(|f| f.mbarrier_decl(&name, b.count())) {
            w.line(level, &format!("{decl};"));
        }
    }
    if let Some(fd) = frags {
        for f in &kernel.fragments {
            if let Some(why) = fd.unsupported(f) {
                return Err(w.unsupported(format!("matrix fragment `{}`: {why}", f.name())));
            }
            let name = w.name(NameKey::Buffer(f.id()), f.name())?;
            w.line(level, &format!("{};", fd.decl(f, &name)));
        }
    }
    w.stmt(&kernel.body, level)?;
    w.out.push_str("}\n");
    Ok(w.out)
}

struct Writer<'a, D: Dialect> {
    d: &'a D,
    kernel: &'a Kernel,
    namer: Namer,
    out: String,
    /// Scope of each allocation (parameters are global).
    scopes: HashMap<u64, Scope>,
    /// Shared tiles in Hopper's swizzled layout: threads reach them through
    /// [`Dialect::swizzled_index`].
    swizzled: HashSet<u64>,
}

impl<D: Dialect> Writer<'_, D> {
    fn line(&mut self, level: Level, text: &str) {
        self.out.push_str(&format!("{level}{text}\n"));
    }

    /// A comment line (`// block C`): where the following statements came from.
    fn comment(&mut self, level: Level, text: &str) {
        self.line(level, &format!("// {text}"));
    }

    fn invalid(&self, what: String) -> EmitError {
        EmitError::Invalid {
            kernel: self.kernel.name.clone(),
            what,
        }
    }

    fn unsupported(&self, what: String) -> EmitError {
        EmitError::Unsupported {
            kernel: self.kernel.name.clone(),
            backend: D::NAME,
            what,
        }
    }

    fn name(&self, key: NameKey, ir_name: &str) -> Result<String, EmitError> {
        self.namer
            .get(key)
            .map(str::to_string)
            .ok_or_else(|| self.invalid(format!("`{ir_name}` is used outside its scope")))
    }

    fn buffer_name(&self, b: &Buffer) -> Result<String, EmitError> {
        self.name(NameKey::Buffer(b.id()), b.name())
    }

    fn stmt(&mut self, s: &KStmt, level: Level) -> Result<(), EmitError> {
        match s {
            KStmt::Seq(items) => {
                for item in items {
                    self.stmt(item, level)?;
                }
            }
            KStmt::For {
                var,
                extent,
                unroll,
                body,
            } => {
                if i32::try_from(*extent).is_err() {
                    return Err(self.invalid(format!("loop `{var}` has extent {extent}")));
                }
                if *unroll {
                    self.line(level, D::UNROLL_PRAGMA);
                } else if let Some(keep) = D::KEEP_LOOP_PRAGMA {
                    let (mut unrolled_inside, mut barrier_inside) = (false, false);
                    body.visit(&mut |s| {
                        unrolled_inside |= matches!(s, KStmt::For { unroll: true, .. });
                        barrier_inside |= matches!(s, KStmt::Barrier);
                    });
                    if unrolled_inside && !barrier_inside {
                        self.line(level, keep);
                    }
                }
                self.namer.push_scope();
                let name = self.namer.declare(NameKey::Var(var.id()), var.name());
                let ty = self.d.scalar_type(var.dtype());
                let lit = self.int_literal(*extent, var.dtype())?.0;
                self.line(
                    level,
                    &format!("for ({ty} {name} = 0; {name} < {lit}; ++{name}) {{"),
                );
                self.stmt(body, level.next())?;
                self.namer.pop_scope();
                self.line(level, "}");
            }
            KStmt::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(cond)?.0;
                self.line(level, &format!("if ({c}) {{"));
                self.block(then, level.next())?;
                if let Some(o) = otherwise {
                    self.line(level, "} else {");
                    self.block(o, level.next())?;
                }
                self.line(level, "}");
            }
            KStmt::Let { var, value, body } => {
                let v = self.expr(value)?.0;
                let name = self.namer.declare(NameKey::Var(var.id()), var.name());
                let ty = self.d.scalar_type(var.dtype());
                self.line(level, &format!("{ty} {name} = {v};"));
                self.stmt(body, level)?;
            }
            KStmt::Store {
                buffer,
                index,
                value,
                lanes,
            } => {
                let text = if *lanes == 1 {
                    let dst = self.buffer_name(buffer)?;
                    let v = self.expr(value)?.0;
                    // Global bool tensors are stored as 32-bit words (0 or 1).
                    let v = if crate::stored_as_word(buffer) {
                        format!("({v}) ? 1u : 0u")
                    } else {
                        v
                    };
                    format!("{dst}[{}] = {v};", self.index(buffer, index)?.0)
                } else {
                    let Expr::Load {
                        buffer: src,
                        indices,
                        ..
                    } = value
                    else {
                        // `check_lowered` refuses a vector store whose value is not a load.
                        return Err(self.invalid(format!(
                            "vector store to `{}` is not a copy",
                            buffer.name()
                        )));
                    };
                    let to = self.vector_ref(buffer, index, *lanes, false)?;
                    let from = self.vector_ref(src, &indices[0], *lanes, true)?;
                    let sync = format!("{to} = {from};");
                    let scope =
                        |b: &Buffer| self.scopes.get(&b.id()).copied().unwrap_or(Scope::Global);
                    if self.kernel.async_copies
                        && scope(buffer) == Scope::Shared
                        && scope(src) == Scope::Global
                    {
                        let bytes = *lanes * buffer.dtype().bytes() as u32;
                        let dst = self.pointer(buffer, index)?;
                        let from_ptr = self.pointer(src, &indices[0])?;
                        if let Some(lines) = self.d.async_copy(&dst, &from_ptr, bytes, &sync) {
                            for l in lines {
                                self.line(level, &l);
                            }
                            return Ok(());
                        }
                    }
                    sync
                };
                self.line(level, &text);
            }
            KStmt::Barrier => {
                if self.kernel.async_copies {
                    for l in self.d.async_wait(self.kernel.async_pending) {
                        self.line(level, &l);
                    }
                    // The copies may fill tiles a `wgmma` reads (the async proxy): each
                    // thread fences its writes before the barrier that publishes them.
                    if !self.swizzled.is_empty() {
                        let Some(fence) = self.d.proxy_fence() else {
                            return Err(self.unsupported(format!(
                                "{} has no fence between thread writes and wgmma reads",
                                D::NAME
                            )));
                        };
                        self.line(level, fence);
                    }
                }
                self.line(level, D::BARRIER)
            }
            KStmt::Fence => {
                let fence = self.d.device_fence().ok_or_else(|| {
                    self.unsupported(
                        "a device-scope fence (blocks order nothing between them within a launch here)"
                            .into(),
                    )
                })?;
                self.line(level, fence);
            }
            KStmt::AtomicAdd(a) => self.atomic_add(a, level)?,
            // Hints and launch controls: a dialect without them writes nothing, which
            // changes no value (the launches are ordered anyway).
            KStmt::Prefetch {
                buffer,
                index,
                bytes,
            } => {
                let address = format!(
                    "&{}[{}]",
                    self.buffer_name(buffer)?,
                    self.index(buffer, index)?.0
                );
                let text = match bytes {
                    0 => self.d.prefetch(&address),
                    b => self.d.prefetch_bulk(&address, *b),
                };
                if let Some(text) = text {
                    self.line(level, &text);
                }
            }
            KStmt::Grid(GridControl::Wait) => {
                if let Some(wait) = self.d.grid_dependency() {
                    self.line(level, wait);
                }
            }
            KStmt::Grid(GridControl::LaunchDependents) => {
                if let Some(launch) = self.d.launch_dependents() {
                    self.line(level, launch);
                }
            }
            KStmt::Comment(t) => self.comment(level, t),
            KStmt::Frag(op) => {
                let text = self.frag(op)?;
                self.line(level, &format!("{text};"));
            }
            KStmt::Mapping(_) => {
                // `check_lowered` refuses these before writing starts; kept as an error
                // rather than a panic for callers that skip the check.
                return Err(EmitError::Unlowered {
                    kernel: self.kernel.name.clone(),
                    node: UnloweredNode::TaskMapping,
                    detail: "in the kernel body".into(),
                });
            }
        }
        Ok(())
    }

    /// `old[j] = atomicAdd(counter + i, value);` (without `old[j] = ` where the old value
    /// goes nowhere).
    fn atomic_add(&mut self, a: &AtomicAdd, level: Level) -> Result<(), EmitError> {
        let [index] = a.indices.as_slice() else {
            return Err(self.invalid(format!(
                "atomic add on `{}` with {} indices (lowered accesses have one)",
                a.buffer.name(),
                a.indices.len()
            )));
        };
        let ptr = self.pointer(&a.buffer, index)?;
        let value = self.expr(&a.value)?.0;
        let call = self
            .d
            .atomic_add(&ptr, &value)
            .ok_or_else(|| self.unsupported("an atomic add on device memory".into()))?;
        let text = match &a.old {
            Some((b, idx)) => {
                let [j] = idx.as_slice() else {
                    return Err(self.invalid(format!(
                        "the old value of an atomic into `{}` with {} indices",
                        b.name(),
                        idx.len()
                    )));
                };
                format!(
                    "{}[{}] = {call};",
                    self.buffer_name(b)?,
                    self.index(b, j)?.0
                )
            }
            None => format!("{call};"),
        };
        self.line(level, &text);
        Ok(())
    }

    /// A statement in its own scope (the body of an `if`).
    fn block(&mut self, s: &KStmt, level: Level) -> Result<(), EmitError> {
        self.namer.push_scope();
        let r = self.stmt(s, level);
        self.namer.pop_scope();
        r
    }

    /// `*(float4*)(A + i)`: a `lanes`-wide access of `buffer` at `index`.
    /// `(name + index)`: a pointer to an element.
    fn pointer(&self, buffer: &Buffer, index: &Expr) -> Result<String, EmitError> {
        let (idx, p) = self.index(buffer, index)?;
        let idx = if needs_parens(Prec::Additive, p, true) {
            format!("({idx})")
        } else {
            idx
        };
        Ok(format!("({} + {idx})", self.buffer_name(buffer)?))
    }

    fn vector_ref(
        &self,
        buffer: &Buffer,
        index: &Expr,
        lanes: u32,
        is_const: bool,
    ) -> Result<String, EmitError> {
        let scope = self
            .scopes
            .get(&buffer.id())
            .copied()
            .unwrap_or(Scope::Global);
        let vt = self.d.vector_type(buffer.dtype(), lanes);
        let cast = self.d.vector_pointer(scope, is_const, vt);
        let (idx, p) = self.index(buffer, index)?;
        let idx = if needs_parens(Prec::Additive, p, true) {
            format!("({idx})")
        } else {
            idx
        };
        Ok(format!("*{cast}({} + {idx})", self.buffer_name(buffer)?))
    }

    /// The element index `index` of `buffer` as source text: the expression itself, or
    /// in a swizzled tile where it physically lies ([`Dialect::swizzled_index`]).
    fn index(&self, buffer: &Buffer, index: &Expr) -> Result<(String, Prec), EmitError> {
        if !self.swizzled.contains(&buffer.id()) {
            return self.expr(index);
        }
        if buffer.dtype().bytes() != 2 {
            return Err(self.invalid(format!(
                "swizzled tile `{}` of {} (the swizzle is laid out for halves)",
                buffer.name(),
                buffer.dtype()
            )));
        }
        let idx = self.expr(index)?.0;
        match self.d.swizzled_index(&idx) {
            Some(text) => Ok((text, Prec::Atom)),
            None => Err(self.unsupported(format!(
                "thread access to the swizzled tile `{}`: {} has none",
                buffer.name(),
                D::NAME
            ))),
        }
    }

    fn int_literal(&self, v: i64, d: DType) -> Result<(String, Prec), EmitError> {
        match d {
            DType::I32 if v == i32::MIN as i64 => Ok(("(-2147483647 - 1)".into(), Prec::Atom)),
            DType::I32 if i32::try_from(v).is_ok() => {
                Ok((v.to_string(), if v < 0 { Prec::Neg } else { Prec::Atom }))
            }
            DType::U32 if u32::try_from(v).is_ok() => Ok((format!("{v}u"), Prec::Atom)),
            DType::F32 | DType::F16 => Ok(self.float_literal(v as f64, d)),
            _ => Err(self.invalid(format!("integer literal {v} does not fit {d}"))),
        }
    }

    fn float_literal(&self, v: f64, d: DType) -> (String, Prec) {
        let text = float_text(v, d);
        let s = self.d.float_literal(d, text.as_deref(), v);
        let p = if s.starts_with('-') {
            Prec::Neg
        } else {
            Prec::Atom
        };
        (s, p)
    }

    /// `e` as source text with its precedence.
    fn expr(&self, e: &Expr) -> Result<(String, Prec), EmitError> {
        let wrap = |(s, p): (String, Prec), parent: Prec, right: bool| {
            if needs_parens(parent, p, right) {
                format!("({s})")
            } else {
                s
            }
        };
        Ok(match e {
            Expr::Int(v, d) => self.int_literal(*v, *d)?,
            Expr::Float(v, d) => self.float_literal(*v, *d),
            Expr::Bool(b) => ((if *b { "true" } else { "false" }).into(), Prec::Atom),
            Expr::Var(v) => (self.name(NameKey::Var(v.id()), v.name())?, Prec::Atom),
            Expr::Builtin(a) => (self.name(NameKey::Builtin(*a), a.var_name())?, Prec::Atom),
            Expr::Binary(op, a, b) => {
                let d = a.dtype();
                let (sa, sb) = (self.expr(a)?, self.expr(b)?);
                match op {
                    BinOp::Min | BinOp::Max => {
                        if d == DType::Bool {
                            return Err(self.unsupported(format!("{op:?} of booleans")));
                        }
                        (self.d.min_max(*op, d, &sa.0, &sb.0), Prec::Atom)
                    }
                    BinOp::Mod if d.is_float() => (self.d.float_mod(d, &sa.0, &sb.0), Prec::Atom),
                    _ => {
                        let sym = match crate::prec::infix_symbol(*op) {
                            Some(sym) => sym,
                            None => {
                                let node = if *op == BinOp::FloorMod {
                                    UnloweredNode::FloorMod
                                } else {
                                    UnloweredNode::FloorDiv
                                };
                                return Err(EmitError::Unlowered {
                                    kernel: self.kernel.name.clone(),
                                    node,
                                    detail: e.to_string(),
                                });
                            }
                        };
                        let p = binop_prec(*op);
                        let text = format!("{} {sym} {}", wrap(sa, p, false), wrap(sb, p, true));
                        (text, p)
                    }
                }
            }
            Expr::Unary(UnOp::Neg, a) => {
                // `right`: a negation of a negation needs parentheses (`--x` decrements).
                let inner = wrap(self.expr(a)?, Prec::Neg, true);
                if a.dtype() == DType::U32 {
                    (format!("0u - {inner}"), Prec::Additive)
                } else {
                    (format!("-{inner}"), Prec::Neg)
                }
            }
            Expr::Unary(UnOp::Not, a) => (
                format!("!{}", wrap(self.expr(a)?, Prec::Prefix, false)),
                Prec::Prefix,
            ),
            Expr::Cast(to, a) => {
                let from = a.dtype();
                let inner = self.expr(a)?;
                if from == *to {
                    inner
                } else {
                    let inner = wrap(inner, Prec::Prefix, false);
                    (self.d.cast(*to, from, &inner), Prec::Prefix)
                }
            }
            Expr::Select(c, t, f) => {
                // `?:` evaluates only the taken branch, so a guarded load never runs out of
                // range (the IR's `if_then_else` relies on this).
                let operand = |e: &Expr| {
                    self.expr(e).map(|(s, p)| {
                        if p <= Prec::Ternary {
                            format!("({s})")
                        } else {
                            s
                        }
                    })
                };
                let (c, t, f) = (operand(c)?, operand(t)?, operand(f)?);
                (format!("{c} ? {t} : {f}"), Prec::Ternary)
            }
            Expr::Call(f, args) => {
                if args.len() != f.arity() {
                    return Err(self.invalid(format!(
                        "{} takes {} arguments, not {}",
                        f.name(),
                        f.arity(),
                        args.len()
                    )));
                }
                let expanded = expand_sigmoid(e);
                if &expanded != e {
                    return self.expr(&expanded);
                }
                let d = args[0].dtype();
                let texts = args
                    .iter()
                    .map(|a| self.expr(a).map(|x| x.0))
                    .collect::<Result<Vec<_>, _>>()?;
                let call = self
                    .d
                    .intrinsic(*f, d, &texts)
                    .ok_or_else(|| self.unsupported(format!("{} on {d}", f.name())))?;
                (call, Prec::Atom)
            }
            Expr::Load {
                buffer,
                indices,
                lanes,
            } => {
                if *lanes != 1 {
                    return Err(self.invalid(format!(
                        "a {lanes}-lane load of `{}` outside a vector store",
                        buffer.name()
                    )));
                }
                if indices.len() != 1 {
                    return Err(EmitError::Unlowered {
                        kernel: self.kernel.name.clone(),
                        node: UnloweredNode::MultiIndexLoad,
                        detail: e.to_string(),
                    });
                }
                let idx = self.index(buffer, &indices[0])?.0;
                let text = format!("{}[{idx}]", self.buffer_name(buffer)?);
                if crate::stored_as_word(buffer) {
                    (format!("({text} != 0u)"), Prec::Atom)
                } else {
                    (text, Prec::Atom)
                }
            }
            Expr::Reduce(_) => {
                return Err(EmitError::Unlowered {
                    kernel: self.kernel.name.clone(),
                    node: UnloweredNode::Reduce,
                    detail: e.to_string(),
                });
            }
        })
    }
}
