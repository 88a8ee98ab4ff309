//! The WGSL writer: module header (bindings, uniform struct, workgroup arrays), entry
//! point, statements, unrolling, vector copies and the hoisting of guarded selects.
//! Expressions are in `expr.rs`.

mod coop;
mod gather;

pub use gather::SWITCH;
pub(crate) use gather::from_env as branch_free_from_env;

use std::collections::{HashMap, HashSet};

use weft_codegen_common::contract::{buffer_lanes, contains_load, used_builtins};
use weft_codegen_common::fold::{div_exact, fold, substitute_consts};
use weft_codegen_common::keywords;
use weft_codegen_common::names::{NameKey, Namer};
use weft_codegen_common::{EmitError, Level, UnloweredNode};
use weft_ir::dtype::DType;
use weft_ir::expr::{BinOp, Buffer, Expr, Var};
use weft_ir::kernel::{KStmt, Kernel, KernelParam};

use weft_codegen_common::{Binding, Emitted, EntryPoint, Language, Uniform};

use crate::index::IndexForms;

/// At most this many copies of one loop body, counting the copies of enclosing unrolled
/// loops (an 8x8 register tile is 64): beyond it a loop stays a loop, with a comment.
pub(crate) const MAX_UNROLLED_COPIES: u64 = 1024;

pub(crate) struct Writer<'a> {
    pub(crate) kernel: &'a Kernel,
    pub(crate) namer: Namer,
    pub(crate) out: String,
    /// Buffers declared as `array<vec4<T>>` (every access a whole number of vec4s).
    pub(crate) vec4: HashSet<u64>,
    /// Variables of unrolled loops (and lets folded to constants) with their values.
    consts: HashMap<Var, i64>,
    /// Copies of the innermost body per iteration of the unrolled loops around it.
    unroll_product: u64,
    /// Guarded vector copies written without a branch ([`gather::SWITCH`]).
    branch_free: bool,
    /// `&&` and `||` of load-free operands written `&` and `|` ([`IndexForms`]).
    pub(crate) eager_logic: bool,
}

/// The WGSL spelling of a scalar type.
pub(crate) fn ty(d: DType) -> &'static str {
    match d {
        DType::F32 => "f32",
        DType::F16 => "f16",
        DType::I32 => "i32",
        DType::U32 => "u32",
        DType::Bool => "bool",
    }
}

/// True if `e` holds a select whose branches load memory (it must become an `if`).
pub(crate) fn needs_hoist(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |e| {
        if let Expr::Select(_, t, f) = e {
            found |= contains_load(t) || contains_load(f);
        }
    });
    found
}

/// True if writing `s` may declare a name at its own level (so unrolled copies of it need
/// braces). Conservative: extra braces cost nothing.
fn needs_block(s: &KStmt) -> bool {
    match s {
        KStmt::Seq(items) => items.iter().any(needs_block),
        KStmt::Let { .. } => true,
        KStmt::Store {
            index,
            value,
            lanes,
            ..
        } => *lanes > 1 || needs_hoist(index) || needs_hoist(value),
        KStmt::If {
            cond,
            then,
            otherwise,
        } => {
            needs_hoist(cond) || needs_block(then) || otherwise.as_deref().is_some_and(needs_block)
        }
        KStmt::For { unroll, body, .. } => *unroll && needs_block(body),
        KStmt::Barrier
        | KStmt::Mapping(_)
        | KStmt::Comment(_)
        | KStmt::Frag(_)
        | KStmt::Fence
        | KStmt::AtomicAdd(_)
        | KStmt::Prefetch { .. }
        | KStmt::Grid(_) => false,
    }
}

/// What [`write_module`] writes into a module that may hold other kernels' entry points.
pub(crate) struct Part {
    /// The kernel's declarations and entry point, after the `enable` directives.
    pub source: String,
    /// The `enable` directives it needs, each a line.
    pub enables: Vec<&'static str>,
    /// The names it declares at module scope: a later kernel of the same module avoids
    /// them.
    pub globals: Vec<String>,
}

/// Writes the module for `kernel` (contract and limits already checked), its guarded
/// vector copies without a branch where `branch_free` ([`gather::SWITCH`]).
pub(crate) fn write_module(
    kernel: &Kernel,
    branch_free: bool,
    forms: IndexForms,
) -> Result<Emitted, EmitError> {
    let (part, entry) = write_part(kernel, &[], branch_free, forms)?;
    let mut source: String = part.enables.concat();
    if !source.is_empty() {
        source.push('\n');
    }
    source.push_str(&part.source);
    Ok(Emitted {
        language: Language::Wgsl,
        source,
        kernels: vec![entry],
    })
}

/// Writes `kernel`'s declarations and entry point, avoiding the module-scope names
/// `taken` by kernels before it in the same module.
pub(crate) fn write_part(
    kernel: &Kernel,
    taken: &[String],
    branch_free: bool,
    forms: IndexForms,
) -> Result<(Part, EntryPoint), EmitError> {
    let mut namer = if kernel.uses_fragments() {
        Namer::new(&[keywords::WGSL, coop::ROLE_NAMES])
    } else {
        Namer::new(&[keywords::WGSL])
    };
    for name in taken {
        namer.reserve(name);
    }
    let entry_point = namer.declare(NameKey::Item("kernel"), &kernel.name);
    let struct_name = namer.declare(NameKey::Item("Params"), "Params");
    let uniform_name = namer.declare(NameKey::Item("params"), "params");
    let wid = namer.declare(NameKey::Item("workgroup_id"), "workgroup_id");
    let lid = namer.declare(NameKey::Item("local_id"), "local_id");
    let lanes = buffer_lanes(kernel);
    // `array<vec4<T>>` only where every access is a whole number of vec4s (4 lanes, or
    // 8: an f16 copy of 16 bytes is two `vec4<f16>`, since naga 30's `bitcast` cannot
    // split a `vec4<u32>` into halves). (Measured on an H100 through Vulkan, 2026-11-22:
    // declaring a workgroup tile vec4 as soon as one access is, and writing its scalar
    // elements as components `a[i / 4][i % 4]`, made the matmul template 15-25% slower,
    // although its fragment reads became vector loads.) Cooperative loads and stores take
    // a pointer to a scalar element.
    let tiles = weft_codegen_common::contract::fragment_buffers(kernel);
    let all_vec4 = |b: &Buffer, global: bool| {
        b.dtype() != DType::Bool
            && !tiles.contains(&b.id())
            && (global || b.numel() % 4 == 0)
            && lanes
                .get(&b.id())
                .is_some_and(|l| !l.is_empty() && l.iter().all(|n| n % 4 == 0))
    };
    let mut w = Writer {
        kernel,
        namer,
        out: String::new(),
        vec4: HashSet::new(),
        consts: HashMap::new(),
        unroll_product: 1,
        branch_free,
        eager_logic: forms.eager_logic,
    };
    let mut enables = Vec::new();
    if kernel.uses_dtype(DType::F16) {
        enables.push("enable f16;\n");
    }
    if kernel.uses_fragments() {
        enables.push("enable wgpu_cooperative_matrix;\n");
    }
    let mut globals = vec![entry_point.clone()];

    // Scalars: one uniform struct; f16 travels as f32 and bool as u32 (neither is
    // host-shareable in a uniform buffer without extensions).
    let mut fields = Vec::new();
    let mut struct_lines = Vec::new();
    let mut scalar_lets = Vec::new();
    for (i, p) in kernel.params.iter().enumerate() {
        if let KernelParam::Scalar(v) = p {
            let name = w.namer.declare(NameKey::Var(v.id()), v.name());
            let (field_ty, read) = match v.dtype() {
                DType::F16 => ("f32", format!("f16({uniform_name}.{name})")),
                DType::Bool => ("u32", format!("{uniform_name}.{name} != 0u")),
                d => (ty(d), format!("{uniform_name}.{name}")),
            };
            fields.push((i, 4 * fields.len() as u64));
            struct_lines.push(format!("    {name}: {field_ty},"));
            scalar_lets.push(format!("let {name}: {} = {read};", ty(v.dtype())));
        }
    }
    if !struct_lines.is_empty() {
        globals.push(struct_name.clone());
        w.out.push_str(&format!(
            "struct {struct_name} {{\n{}\n}}\n\n",
            struct_lines.join("\n")
        ));
    }

    let mut bindings = Vec::new();
    for (i, p) in kernel.params.iter().enumerate() {
        let KernelParam::Buffer { buffer, access } = p else {
            continue;
        };
        let name = w.namer.declare(NameKey::Buffer(buffer.id()), buffer.name());
        globals.push(name.clone());
        let vec4 = all_vec4(buffer, true);
        if vec4 {
            w.vec4.insert(buffer.id());
        }
        let binding = bindings.len() as u32;
        let mode = if access.writes() {
            "read_write"
        } else {
            "read"
        };
        w.out.push_str(&format!(
            "@group(0) @binding({binding}) var<storage, {mode}> {name}: array<{}>;\n",
            elem_ty(weft_codegen_common::storage_dtype(buffer), vec4)
        ));
        bindings.push(Binding {
            binding,
            param: i,
            read_only: !access.writes(),
            vec4,
        });
    }
    let uniform = (!fields.is_empty()).then(|| Uniform {
        binding: bindings.len() as u32,
        size: (4 * fields.len() as u64).div_ceil(16) * 16,
        fields,
    });
    if let Some(u) = &uniform {
        w.out.push_str(&format!(
            "@group(0) @binding({}) var<uniform> {uniform_name}: {struct_name};\n",
            u.binding
        ));
    }
    if !w.out.is_empty() && !w.out.ends_with("\n\n") {
        w.out.push('\n');
    }

    for axis in used_builtins(kernel) {
        w.namer.declare(NameKey::Builtin(axis), axis.var_name());
    }
    let mut allocs = Vec::new();
    for b in &kernel.shared {
        let name = w.namer.declare(NameKey::Buffer(b.id()), b.name());
        globals.push(name.clone());
        let vec4 = all_vec4(b, false);
        if vec4 {
            w.vec4.insert(b.id());
        }
        w.out
            .push_str(&format!("var<workgroup> {name}: {};\n", array_ty(b, vec4)));
    }
    if !kernel.shared.is_empty() {
        w.out.push('\n');
    }
    for b in &kernel.locals {
        let name = w.namer.declare(NameKey::Buffer(b.id()), b.name());
        let vec4 = all_vec4(b, false);
        if vec4 {
            w.vec4.insert(b.id());
        }
        allocs.push(format!("var {name}: {};", array_ty(b, vec4)));
    }
    for f in &kernel.fragments {
        if let Some(why) = coop::unsupported(f) {
            return Err(w.unsupported(format!("matrix fragment `{}`: {why}", f.name())));
        }
        let name = w.namer.declare(NameKey::Buffer(f.id()), f.name());
        let t = coop::coop_type(f);
        allocs.push(format!("var {name}: array<{t}, {}>;", f.count()));
    }

    let [x, y, z] = kernel.block;
    w.out
        .push_str(&format!("@compute @workgroup_size({x}, {y}, {z})\n"));
    w.out.push_str(&format!(
        "fn {entry_point}(@builtin(workgroup_id) {wid}: vec3<u32>, \
         @builtin(local_invocation_id) {lid}: vec3<u32>) {{\n"
    ));
    let level = Level(1);
    for axis in used_builtins(kernel) {
        let name = w
            .namer
            .get(NameKey::Builtin(axis))
            .unwrap_or(axis.var_name());
        let src = if axis.is_block() { &wid } else { &lid };
        let c = ["x", "y", "z"][axis.dim()];
        let line = format!("let {name}: i32 = i32({src}.{c});");
        w.line(level, &line);
    }
    for l in scalar_lets.iter().chain(&allocs) {
        w.line(level, l);
    }
    w.stmt(&kernel.body, level)?;
    w.out.push_str("}\n");
    if uniform.is_some() {
        globals.push(uniform_name.clone());
    }
    let mut entry = EntryPoint::new(kernel, entry_point);
    entry.bindings = bindings;
    entry.uniform = uniform;
    let part = Part {
        source: w.out,
        enables,
        globals,
    };
    Ok((part, entry))
}

fn elem_ty(d: DType, vec4: bool) -> String {
    if vec4 {
        format!("vec4<{}>", ty(d))
    } else {
        ty(d).to_string()
    }
}

fn array_ty(b: &Buffer, vec4: bool) -> String {
    let len = if vec4 { b.numel() / 4 } else { b.numel() };
    format!("array<{}, {len}>", elem_ty(b.dtype(), vec4))
}

impl Writer<'_> {
    pub(crate) fn line(&mut self, level: Level, text: &str) {
        self.out.push_str(&format!("{level}{text}\n"));
    }

    /// A comment line (`// block C`): where the following statements came from.
    fn comment(&mut self, level: Level, text: &str) {
        self.line(level, &format!("// {text}"));
    }

    pub(crate) fn invalid(&self, what: String) -> EmitError {
        EmitError::Invalid {
            kernel: self.kernel.name.clone(),
            what,
        }
    }

    /// `e` with unrolled loop variables replaced and constants folded.
    fn resolve(&self, e: &Expr) -> Expr {
        if self.consts.is_empty() {
            fold(e)
        } else {
            substitute_consts(e, &self.consts)
        }
    }

    /// `e` resolved (unrolled loop variables replaced, constants folded).
    pub(crate) fn resolved(&self, e: &Expr) -> Expr {
        self.resolve(e)
    }

    /// [`Self::prepare`] for other modules.
    pub(crate) fn prepare_expr(&mut self, e: &Expr, level: Level) -> Result<String, EmitError> {
        self.prepare(e, level)
    }

    /// `e` resolved, with guarded selects hoisted into statements at `level`; the text.
    fn prepare(&mut self, e: &Expr, level: Level) -> Result<String, EmitError> {
        let e = self.resolve(e);
        let e = self.hoist(&e, level)?;
        Ok(self.expr(&e)?.0)
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
                let copies = self.unroll_product.saturating_mul((*extent).max(0) as u64);
                if *unroll && copies <= MAX_UNROLLED_COPIES {
                    self.unrolled(var, *extent, body, level)?;
                } else {
                    if *unroll {
                        self.comment(
                            level,
                            &format!("not unrolled: more than {MAX_UNROLLED_COPIES} copies"),
                        );
                    }
                    let lit = self.int_literal(*extent, var.dtype())?.0;
                    self.namer.push_scope();
                    let i = self.namer.declare(NameKey::Var(var.id()), var.name());
                    let t = ty(var.dtype());
                    self.line(
                        level,
                        &format!("for (var {i}: {t} = 0; {i} < {lit}; {i}++) {{"),
                    );
                    let r = self.stmt(body, level.next());
                    self.namer.pop_scope();
                    r?;
                    self.line(level, "}");
                }
            }
            KStmt::If {
                cond,
                then,
                otherwise,
            } => match self.resolve(cond) {
                // A condition an unrolled copy decides: keep only the branch taken.
                Expr::Bool(taken) => {
                    let branch = if taken {
                        Some(&**then)
                    } else {
                        otherwise.as_deref()
                    };
                    if let Some(b) = branch {
                        self.copy(b, needs_block(b), level)?;
                    }
                }
                // With the switch on, a guarded vector copy is written without a branch
                // (`gather.rs`): the guard writes it and says so.
                cond if self.branch_free_copy(&cond, then, otherwise.as_deref(), level)? => {}
                cond => {
                    let cond = self.hoist(&cond, level)?;
                    let c = self.expr(&cond)?.0;
                    self.line(level, &format!("if ({c}) {{"));
                    self.scoped(then, level.next())?;
                    if let Some(o) = otherwise {
                        self.line(level, "} else {");
                        self.scoped(o, level.next())?;
                    }
                    self.line(level, "}");
                }
            },
            KStmt::Let { var, value, body } => {
                let value = self.resolve(value);
                if let Expr::Int(v, _) = value {
                    // A let an unrolled copy makes constant folds into its uses.
                    self.consts.insert(var.clone(), v);
                    let r = self.stmt(body, level);
                    self.consts.remove(var);
                    return r;
                }
                let value = self.hoist(&value, level)?;
                let v = self.expr(&value)?.0;
                let name = self.namer.declare(NameKey::Var(var.id()), var.name());
                self.line(level, &format!("let {name}: {} = {v};", ty(var.dtype())));
                self.stmt(body, level)?;
            }
            KStmt::Store {
                buffer,
                index,
                value,
                lanes,
            } => {
                if *lanes > 1 {
                    return self.vector_store(buffer, index, value, *lanes, level);
                }
                let i = self.prepare(index, level)?;
                let v = self.prepare(value, level)?;
                let dst = self.buffer_name(buffer)?;
                // Global bool tensors are stored as u32 words (0 or 1).
                let v = if weft_codegen_common::stored_as_word(buffer) {
                    format!("select(0u, 1u, {v})")
                } else {
                    v
                };
                self.line(level, &format!("{dst}[{i}] = {v};"));
            }
            KStmt::Barrier => self.line(level, "workgroupBarrier();"),
            // WGSL's atomics are relaxed and its barriers reach one workgroup: nothing
            // orders one workgroup's plain writes before another's reads in a dispatch
            // (`TargetLimits::device_fence` is false, so templates keep two kernels).
            KStmt::Fence | KStmt::AtomicAdd(_) => {
                return Err(self.unsupported(
                    "a device-scope fence or atomic (WGSL orders nothing between workgroups within a dispatch)"
                        .into(),
                ));
            }
            // WebGPU has no prefetch and orders dispatches itself: a hint and a launch
            // control change no value, so they are left out.
            KStmt::Prefetch { .. } | KStmt::Grid(_) => {}
            KStmt::Frag(op) => self.frag(op, level)?,
            // In unrolled copies, only the first copy carries the block's name.
            KStmt::Comment(t) => {
                if self.consts.values().all(|v| *v == 0) {
                    self.comment(level, t);
                }
            }
            KStmt::Mapping(_) => {
                // `check_lowered` refuses these first; an error, not a panic, regardless.
                return Err(EmitError::Unlowered {
                    kernel: self.kernel.name.clone(),
                    node: UnloweredNode::TaskMapping,
                    detail: "in the kernel body".into(),
                });
            }
        }
        Ok(())
    }

    /// A statement in its own scope (an `if` branch: the braces are already written).
    fn scoped(&mut self, s: &KStmt, level: Level) -> Result<(), EmitError> {
        self.namer.push_scope();
        let r = self.stmt(s, level);
        self.namer.pop_scope();
        r
    }

    /// One copy of `s` at `level`, in braces if it declares names.
    fn copy(&mut self, s: &KStmt, braces: bool, level: Level) -> Result<(), EmitError> {
        if !braces {
            return self.stmt(s, level);
        }
        self.line(level, "{");
        self.scoped(s, level.next())?;
        self.line(level, "}");
        Ok(())
    }

    /// `extent` copies of `body` with `var` replaced by 0, 1, ...
    fn unrolled(
        &mut self,
        var: &Var,
        extent: i64,
        body: &KStmt,
        level: Level,
    ) -> Result<(), EmitError> {
        if self.unroll_product == 1 {
            self.comment(level, &format!("unrolled: for {var} in 0..{extent}"));
        }
        let braces = needs_block(body);
        let outer = self.unroll_product;
        self.unroll_product = outer.saturating_mul(extent.max(0) as u64);
        let mut r = Ok(());
        for v in 0..extent {
            self.consts.insert(var.clone(), v);
            r = self.copy(body, braces, level);
            if r.is_err() {
                break;
            }
        }
        self.consts.remove(var);
        self.unroll_product = outer;
        r
    }

    pub(crate) fn buffer_name(&self, b: &Buffer) -> Result<String, EmitError> {
        self.namer
            .get(NameKey::Buffer(b.id()))
            .map(str::to_string)
            .ok_or_else(|| self.invalid(format!("buffer `{}` is not declared", b.name())))
    }

    /// A `lanes`-wide copy `dst[di..] = src[si..]`: by `vec4`s where a side is declared
    /// `array<vec4<T>>` (then every access to it is a whole number of vec4s, and its
    /// index a multiple of 4), element by element otherwise.
    fn vector_store(
        &mut self,
        dst: &Buffer,
        di: &Expr,
        value: &Expr,
        lanes: u32,
        level: Level,
    ) -> Result<(), EmitError> {
        let Expr::Load {
            buffer: src,
            indices,
            ..
        } = value
        else {
            return Err(self.invalid(format!("vector store to `{}` is not a copy", dst.name())));
        };
        let (di, si) = (self.resolve(di), self.resolve(&indices[0]));
        let (di, si) = (self.hoist(&di, level)?, self.hoist(&si, level)?);
        let (dn, sn) = (self.buffer_name(dst)?, self.buffer_name(src)?);
        // The `j`-th vec4 from element index `e`.
        let quarter = |e: &Expr, j: u32| {
            let q = div_exact(e, 4)
                .unwrap_or_else(|| Expr::binary(BinOp::Div, e.clone(), Expr::int(4)));
            fold(&(q + Expr::int(j as i64)))
        };
        let lane = |e: &Expr, k: u32| fold(&(e.clone() + Expr::int(k as i64)));
        let (dv, sv) = (self.vec4.contains(&dst.id()), self.vec4.contains(&src.id()));
        if (dv || sv) && !lanes.is_multiple_of(4) {
            return Err(self.invalid(format!(
                "a {lanes}-lane copy between `{dn}` and `{sn}`, one declared as vec4s"
            )));
        }
        let comps = ["x", "y", "z", "w"];
        match (dv, sv) {
            (true, true) => {
                for j in 0..lanes / 4 {
                    let (d, s) = (
                        self.expr(&quarter(&di, j))?.0,
                        self.expr(&quarter(&si, j))?.0,
                    );
                    self.line(level, &format!("{dn}[{d}] = {sn}[{s}];"));
                }
            }
            (true, false) => {
                let t = ty(dst.dtype());
                for j in 0..lanes / 4 {
                    let parts = (4 * j..4 * j + 4)
                        .map(|k| Ok(format!("{sn}[{}]", self.expr(&lane(&si, k))?.0)))
                        .collect::<Result<Vec<_>, EmitError>>()?;
                    let d = self.expr(&quarter(&di, j))?.0;
                    self.line(
                        level,
                        &format!("{dn}[{d}] = vec4<{t}>({});", parts.join(", ")),
                    );
                }
            }
            (false, true) => {
                let t = ty(src.dtype());
                for j in 0..lanes / 4 {
                    let s = self.expr(&quarter(&si, j))?.0;
                    let tmp = Var::new("v", src.dtype());
                    let v = self.namer.declare(NameKey::Var(tmp.id()), "v");
                    self.line(level, &format!("let {v}: vec4<{t}> = {sn}[{s}];"));
                    for (k, c) in comps.iter().enumerate() {
                        let d = self.expr(&lane(&di, 4 * j + k as u32))?.0;
                        self.line(level, &format!("{dn}[{d}] = {v}.{c};"));
                    }
                }
            }
            (false, false) => {
                for k in 0..lanes {
                    let d = self.expr(&lane(&di, k))?.0;
                    let s = self.expr(&lane(&si, k))?.0;
                    self.line(level, &format!("{dn}[{d}] = {sn}[{s}];"));
                }
            }
        }
        Ok(())
    }

    /// Rewrites `e` so that no select whose branches load memory remains (WGSL's
    /// `select()` evaluates both operands): a guarded load of one element becomes a
    /// branch-free select over a clamped index, anything else a `var` assigned in an `if`. A `&&`/`||`
    /// whose right side needs that becomes an `if` too, keeping its short circuit.
    fn hoist(&mut self, e: &Expr, level: Level) -> Result<Expr, EmitError> {
        if !needs_hoist(e) {
            return Ok(e.clone());
        }
        Ok(match e {
            // A guarded load of one element whose guard, index and fallback read nothing:
            // where the guard fails the index becomes 0 (in bounds in any buffer), so the
            // load runs unguarded and no branch is needed. (H100 through Vulkan,
            // 2026-11-22: the matmul template at 2039³ went from 585 to 500 µs. The same
            // form for predicated vec4 loads was slower, 3.74 → 4.20 ms at 4096³, so those
            // keep their `if`.)
            Expr::Select(c, t, f)
                if !contains_load(c)
                    && !contains_load(f)
                    && matches!(&**t, Expr::Load { indices, lanes: 1, buffer }
                        if indices.len() == 1
                            && !contains_load(&indices[0])
                            && !self.vec4.contains(&buffer.id())) =>
            {
                let Expr::Load {
                    buffer, indices, ..
                } = &**t
                else {
                    return Err(self.invalid("a guarded load changed shape".into()));
                };
                // The guard, once: it picks both the index and the value.
                let guard = Var::new("guard", DType::Bool);
                let guard_name = self.namer.declare(NameKey::Var(guard.id()), "guard");
                let cond = self.expr(c)?.0;
                self.line(level, &format!("let {guard_name}: bool = {cond};"));
                let cond = guard_name;
                let clamped = Expr::Select(
                    Box::new(guard.expr()),
                    Box::new(indices[0].clone()),
                    Box::new(Expr::Int(0, indices[0].dtype())),
                );
                let load = Expr::Load {
                    buffer: buffer.clone(),
                    indices: vec![clamped],
                    lanes: 1,
                };
                let (load, fallback) = (self.expr(&load)?.0, self.expr(f)?.0);
                let var = Var::new("sel", t.dtype());
                let name = self.namer.declare(NameKey::Var(var.id()), "sel");
                self.line(
                    level,
                    &format!(
                        "let {name}: {} = select({fallback}, {load}, {cond});",
                        ty(t.dtype())
                    ),
                );
                Expr::Var(var)
            }
            Expr::Select(c, t, f) if contains_load(t) || contains_load(f) => {
                let c = self.hoist(c, level)?;
                let c = self.expr(&c)?.0;
                let var = Var::new("sel", t.dtype());
                let name = self.namer.declare(NameKey::Var(var.id()), "sel");
                self.line(level, &format!("var {name}: {};", ty(t.dtype())));
                self.line(level, &format!("if ({c}) {{"));
                self.assign_in_scope(&name, t, level.next())?;
                self.line(level, "} else {");
                self.assign_in_scope(&name, f, level.next())?;
                self.line(level, "}");
                Expr::Var(var)
            }
            Expr::Binary(op @ (BinOp::And | BinOp::Or), a, b) if needs_hoist(b) => {
                let a = self.hoist(a, level)?;
                let a = self.expr(&a)?.0;
                let var = Var::new("cond", DType::Bool);
                let name = self.namer.declare(NameKey::Var(var.id()), "cond");
                self.line(level, &format!("var {name}: bool = {a};"));
                let test = if *op == BinOp::And {
                    name.clone()
                } else {
                    format!("!{name}")
                };
                self.line(level, &format!("if ({test}) {{"));
                self.assign_in_scope(&name, b, level.next())?;
                self.line(level, "}");
                Expr::Var(var)
            }
            Expr::Binary(op, a, b) => Expr::Binary(
                *op,
                Box::new(self.hoist(a, level)?),
                Box::new(self.hoist(b, level)?),
            ),
            Expr::Unary(op, a) => Expr::Unary(*op, Box::new(self.hoist(a, level)?)),
            Expr::Cast(d, a) => Expr::Cast(*d, Box::new(self.hoist(a, level)?)),
            Expr::Select(c, t, f) => {
                Expr::Select(Box::new(self.hoist(c, level)?), t.clone(), f.clone())
            }
            Expr::Call(f, args) => Expr::Call(
                *f,
                args.iter()
                    .map(|a| self.hoist(a, level))
                    .collect::<Result<_, _>>()?,
            ),
            Expr::Load {
                buffer,
                indices,
                lanes,
            } => Expr::Load {
                buffer: buffer.clone(),
                indices: indices
                    .iter()
                    .map(|a| self.hoist(a, level))
                    .collect::<Result<_, _>>()?,
                lanes: *lanes,
            },
            other => other.clone(),
        })
    }

    /// `name = e;` in a new scope at `level`, hoisting inside it (so a nested guarded load
    /// stays under its guard).
    fn assign_in_scope(&mut self, name: &str, e: &Expr, level: Level) -> Result<(), EmitError> {
        self.namer.push_scope();
        let r = self.hoist(e, level).and_then(|e| self.expr(&e));
        self.namer.pop_scope();
        let text = r?.0;
        self.line(level, &format!("{name} = {text};"));
        Ok(())
    }
}
