//! Templates: tensor programs written directly, with task mappings (Hidet's paradigm,
//! seed 002 section 4.1), instead of derived from a te definition by schedule primitives.
//!
//! A [`Template`] declares the function's buffers, then one or more kernels; a
//! [`KernelBuilder`] writes a kernel's body with loops, task-mapping loops over any worker
//! expression, lets, predicated loads, guarded stores, vector copies and explicit
//! barriers. What it builds is an ordinary [`Func`]: the same IR schedules produce, so
//! the printer, lowering, the interpreter (with its race and bounds checks) and every
//! emitter take templates with no special case. Two rules differ from scheduled code, and
//! only because a template says exactly what it wants:
//!
//! - shared and local buffers keep the shape the template gives them (no compaction);
//! - a kernel with an explicit [`KernelBuilder::barrier`] gets no automatic barriers.
//!
//! The paper's cooperative load (figure 8) of a 64×8 tile of `A` by 128 threads, each
//! loading 4 elements, as a template:
//!
//! ```
//! use weft_ir::prelude::*;
//! use weft_ir::mapping::{repeat, spatial};
//! use weft_ir::template::Template;
//!
//! let mut t = Template::new("tile_copy");
//! let a = t.input("A", &[64, 8], DType::F32);
//! let b = t.output("B", &[64, 8], DType::F32);
//! t.kernel(1, 128, |k| {
//!     let tx = k.thread_x();
//!     let smem = k.shared("A_smem", &[64, 8], DType::F32);
//!     k.for_tasks("i, j", repeat(&[4, 1]) * spatial(&[16, 8]), tx.clone(), |k, [i, j]| {
//!         k.store(&smem, [i.clone(), j.clone()], a.at(&[i, j]));
//!     });
//!     k.barrier();
//!     k.for_tasks("i, j", repeat(&[4, 1]) * spatial(&[16, 8]), tx, |k, [i, j]| {
//!         k.store(&b, [i.clone(), j.clone()], smem.at(&[i, j]) * 2.0f32);
//!     });
//! });
//! let func = t.finish().unwrap();
//! assert_eq!(
//!     func.to_string(),
//!     r#"@T.prim_func
//! def tile_copy(A: T.Buffer((64, 8), "float32"), B: T.Buffer((64, 8), "float32")):
//!     A_smem = T.alloc_buffer((64, 8), scope="shared")
//!     for tx in T.thread_binding(128, thread="threadIdx.x"):
//!         for i, j in T.task_mapping(repeat(4, 1) * spatial(16, 8), worker=tx):
//!             A_smem[i, j] = A[i, j]
//!         T.tvm_storage_sync("shared")
//!         for i_1, j_1 in T.task_mapping(repeat(4, 1) * spatial(16, 8), worker=tx):
//!             B[i_1, j_1] = A_smem[i_1, j_1] * T.float32(2)
//! "#
//! );
//! let lowered = weft_ir::lower::lower(&func).unwrap();
//! assert_eq!(lowered.kernels[0].block, [128, 1, 1]);
//! ```

mod builder;

pub use builder::{Indices, KernelBuilder, load_or};

use thiserror::Error;

use crate::dtype::DType;
use crate::expr::{Buffer, Expr, Scope, Var};
use crate::func::{Func, KernelHints, Param, Stmt};
use crate::te::TeError;

/// A function written as a template: its parameters, its allocations and its kernels, in
/// launch order.
#[derive(Debug)]
pub struct Template {
    name: String,
    params: Vec<Param>,
    /// The parameters declared with [`Template::input`]: no kernel may store to them.
    inputs: Vec<Buffer>,
    allocs: Vec<Buffer>,
    kernels: Vec<Stmt>,
    hints: Vec<KernelHints>,
    /// Names already given to variables and buffers, so that each new one is distinct.
    names: std::collections::HashSet<String>,
    /// The first mistake found while building; [`Template::finish`] reports it.
    error: Option<TemplateError>,
}

/// A mistake in a template, naming the template and what is wrong where.
#[derive(Debug, Error, PartialEq)]
pub enum TemplateError {
    #[error("template `{template}`: {what} has extent {extent}; extents must be positive")]
    Extent {
        template: String,
        what: String,
        extent: i64,
    },
    #[error(
        "template `{template}`: `{mapping}` has {rank} task dimensions, but the loop names {vars} task variables"
    )]
    TaskVars {
        template: String,
        mapping: String,
        rank: usize,
        vars: usize,
    },
    #[error("template `{template}`: task mapping {0}", .source)]
    Mapping {
        template: String,
        source: crate::mapping::MappingError,
    },
    #[error(
        "template `{template}`: `{buffer}` has {want} dimensions but is indexed with {got} indices in `{access}`"
    )]
    IndexCount {
        template: String,
        buffer: String,
        want: usize,
        got: usize,
        access: String,
    },
    #[error(
        "template `{template}`: `{buffer}` is neither a parameter nor an allocation of the template (in `{access}`)"
    )]
    UnknownBuffer {
        template: String,
        buffer: String,
        access: String,
    },
    #[error("template `{template}`: stores to input `{buffer}`; declare it with `output`")]
    StoreToInput { template: String, buffer: String },
    #[error(
        "template `{template}`: stores a {value} value into `{buffer}` of {dtype} (in `{access}`); cast it"
    )]
    StoreType {
        template: String,
        buffer: String,
        dtype: DType,
        value: DType,
        access: String,
    },
    #[error("template `{template}`: {source}")]
    Type {
        template: String,
        #[source]
        source: Box<TeError>,
    },
    #[error("template `{template}`: {what}")]
    Invalid { template: String, what: String },
}

/// A launch extent along x, y, z: `128`, `[32, 4]` or `[8, 8, 2]`.
pub trait Extent3 {
    fn extents(&self) -> [i64; 3];
}

impl Extent3 for i64 {
    fn extents(&self) -> [i64; 3] {
        [*self, 1, 1]
    }
}
impl Extent3 for [i64; 1] {
    fn extents(&self) -> [i64; 3] {
        [self[0], 1, 1]
    }
}
impl Extent3 for [i64; 2] {
    fn extents(&self) -> [i64; 3] {
        [self[0], self[1], 1]
    }
}
impl Extent3 for [i64; 3] {
    fn extents(&self) -> [i64; 3] {
        *self
    }
}

impl Template {
    /// An empty template; `name` becomes the function's (and its kernels') name.
    pub fn new(name: impl Into<String>) -> Template {
        Template {
            name: name.into(),
            params: Vec::new(),
            inputs: Vec::new(),
            allocs: Vec::new(),
            kernels: Vec::new(),
            hints: Vec::new(),
            names: Default::default(),
            error: None,
        }
    }

    /// The template's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A global input buffer parameter (read only), appended to the parameter list.
    pub fn input(&mut self, name: &str, shape: &[i64], dtype: DType) -> Buffer {
        let b = self.global(name, shape, dtype);
        self.inputs.push(b.clone());
        b
    }

    /// A global output buffer parameter, appended to the parameter list.
    pub fn output(&mut self, name: &str, shape: &[i64], dtype: DType) -> Buffer {
        self.global(name, shape, dtype)
    }

    /// An existing buffer (a te placeholder, say) as the next parameter.
    pub fn param(&mut self, buffer: &Buffer) {
        self.names.insert(buffer.name().to_string());
        self.params.push(Param::Buffer(buffer.clone()));
    }

    /// A global temporary: memory that one kernel writes and a later one reads (not a
    /// parameter; the runtime allocates it for the launch).
    pub fn temp(&mut self, name: &str, shape: &[i64], dtype: DType) -> Buffer {
        let b = self.global(name, shape, dtype);
        // `global` appends a parameter; a temporary is an allocation instead.
        self.params.pop();
        self.allocs.push(b.clone());
        b
    }

    /// A scalar parameter, as an expression to use in the kernels.
    pub fn scalar(&mut self, name: &str, dtype: DType) -> Expr {
        let v = Var::new(self.fresh(name), dtype);
        self.params.push(Param::Scalar(v.clone()));
        v.expr()
    }

    fn global(&mut self, name: &str, shape: &[i64], dtype: DType) -> Buffer {
        for (dim, &extent) in shape.iter().enumerate() {
            if extent < 1 {
                self.fail(|t| TemplateError::Extent {
                    template: t.to_string(),
                    what: format!("dimension {dim} of `{name}`"),
                    extent,
                });
            }
        }
        let b = Buffer::new(self.fresh(name), shape.to_vec(), dtype, Scope::Global);
        self.params.push(Param::Buffer(b.clone()));
        b
    }

    /// Adds one kernel: `body` runs once per thread of `grid` blocks of `threads` threads.
    /// Launch extents of 1 get no loop; the others become loops bound to `blockIdx` and
    /// `threadIdx` around the body.
    pub fn kernel(
        &mut self,
        grid: impl Extent3,
        threads: impl Extent3,
        body: impl FnOnce(&mut KernelBuilder),
    ) {
        let (stmt, hints) = builder::build_kernel(self, grid.extents(), threads.extents(), body);
        self.kernels.push(stmt);
        self.hints.push(hints);
    }

    /// The Func, after checking every access: indices per dimension, declared buffers,
    /// no store into an input, well-typed expressions and stores. The first mistake made
    /// while building is reported first.
    pub fn finish(self) -> Result<Func, TemplateError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.kernels.is_empty() {
            return Err(TemplateError::Invalid {
                template: self.name,
                what: "has no kernel".into(),
            });
        }
        let func = Func {
            name: self.name.clone(),
            params: self.params,
            allocs: self.allocs,
            body: Stmt::seq(self.kernels),
            kernel_hints: self.hints,
        };
        check(&func, &self.inputs)?;
        Ok(func)
    }

    /// A name not given yet: `base`, else `base_1`, `base_2`, ...
    fn fresh(&mut self, base: &str) -> String {
        crate::schedule::fresh_name(&mut self.names, base)
    }

    /// Records the first error (later ones usually follow from it).
    fn fail(&mut self, e: impl FnOnce(&str) -> TemplateError) {
        if self.error.is_none() {
            self.error = Some(e(&self.name));
        }
    }
}

/// Checks the finished Func's accesses and types.
fn check(func: &Func, inputs: &[Buffer]) -> Result<(), TemplateError> {
    let template = || func.name.clone();
    let known = |b: &Buffer| func.is_param(b) || func.allocs.contains(b);
    let mut result = Ok(());
    let mut fail = |e: TemplateError| {
        if result.is_ok() {
            result = Err(e);
        }
    };
    let check_access = |b: &Buffer, indices: &[Expr], access: String| {
        if !known(b) {
            return Err(TemplateError::UnknownBuffer {
                template: template(),
                buffer: b.name().to_string(),
                access,
            });
        }
        if indices.len() != b.ndim() {
            return Err(TemplateError::IndexCount {
                template: template(),
                buffer: b.name().to_string(),
                want: b.ndim(),
                got: indices.len(),
                access,
            });
        }
        Ok(())
    };
    func.body.visit_exprs(&mut |e| {
        for (b, idx) in e.loads() {
            if let Err(err) = check_access(b, idx, e.to_string()) {
                fail(err);
            }
        }
        if let Err(source) = crate::te::typecheck(e, &func.name) {
            fail(TemplateError::Type {
                template: template(),
                source: Box::new(source),
            });
        }
    });
    func.body.visit(&mut |s| match s {
        Stmt::Store {
            buffer,
            indices,
            value,
        } => {
            let access = format!(
                "{}[{}] = {value}",
                buffer.name(),
                indices
                    .iter()
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if let Err(err) = check_access(buffer, indices, access.clone()) {
                fail(err);
            } else if inputs.contains(buffer) {
                fail(TemplateError::StoreToInput {
                    template: template(),
                    buffer: buffer.name().to_string(),
                });
            } else if value.dtype() != buffer.dtype() {
                fail(TemplateError::StoreType {
                    template: template(),
                    buffer: buffer.name().to_string(),
                    dtype: buffer.dtype(),
                    value: value.dtype(),
                    access,
                });
            }
        }
        Stmt::Frag(op) => {
            let text = crate::printer::frag_op_string(op);
            if let Err(what) = op.check() {
                fail(TemplateError::Invalid {
                    template: template(),
                    what: format!("{what} (in `{text}`)"),
                });
            } else {
                for (buffer, origin, writes) in op.accesses() {
                    if let Err(err) = check_access(buffer, origin, text.clone()) {
                        fail(err);
                    } else if writes && inputs.contains(buffer) {
                        fail(TemplateError::StoreToInput {
                            template: template(),
                            buffer: buffer.name().to_string(),
                        });
                    } else if buffer.ndim() < 2 {
                        fail(TemplateError::Invalid {
                            template: template(),
                            what: format!(
                                "`{}` has one dimension; a tile needs rows and columns (in `{text}`)",
                                buffer.name()
                            ),
                        });
                    }
                }
            }
        }
        Stmt::Prefetch { buffer, indices } => {
            let idx: Vec<String> = indices.iter().map(|i| i.to_string()).collect();
            let access = format!("prefetch {}[{}]", buffer.name(), idx.join(", "));
            if let Err(err) = check_access(buffer, indices, access.clone()) {
                fail(err);
            } else if buffer.scope() != Scope::Global {
                fail(TemplateError::Invalid {
                    template: template(),
                    what: format!(
                        "`{access}`: `{}` is {} memory; prefetches bring global memory closer",
                        buffer.name(),
                        buffer.scope()
                    ),
                });
            }
        }
        Stmt::If { cond, .. } if cond.dtype() != DType::Bool => fail(TemplateError::Invalid {
            template: template(),
            what: format!("the condition `{cond}` is a {}, not a bool", cond.dtype()),
        }),
        _ => {}
    });
    result
}
