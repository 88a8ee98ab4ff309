//! Variables.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Expr;
use crate::dtype::DType;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh identity for a variable, buffer or block. Identities are never printed: the
/// printers use names, so output does not depend on the order objects were created in.
pub(crate) fn fresh_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// A scalar variable: a loop variable, a block iteration variable, a task index or a
/// scalar kernel parameter. Two `Var`s are the same variable only if they come from the
/// same [`Var::new`] call; the name is for printing.
#[derive(Clone)]
pub struct Var(Arc<VarNode>);

#[derive(Debug)]
struct VarNode {
    id: u64,
    name: String,
    dtype: DType,
}

impl Var {
    /// A new variable with the given name and type.
    pub fn new(name: impl Into<String>, dtype: DType) -> Var {
        Var(Arc::new(VarNode {
            id: fresh_id(),
            name: name.into(),
            dtype,
        }))
    }

    /// A new `i32` index variable.
    pub fn index(name: impl Into<String>) -> Var {
        Var::new(name, DType::I32)
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }

    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    /// The identity of this variable (stable for its lifetime, never printed).
    pub fn id(&self) -> u64 {
        self.0.id
    }

    /// A new variable of the same type with another name.
    pub fn renamed(&self, name: impl Into<String>) -> Var {
        Var::new(name, self.dtype())
    }

    /// This variable as an expression.
    pub fn expr(&self) -> Expr {
        Expr::Var(self.clone())
    }
}

impl PartialEq for Var {
    fn eq(&self, other: &Var) -> bool {
        self.0.id == other.0.id
    }
}
impl Eq for Var {}
impl Hash for Var {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.id.hash(h)
    }
}
impl PartialOrd for Var {
    fn partial_cmp(&self, other: &Var) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Var {
    fn cmp(&self, other: &Var) -> std::cmp::Ordering {
        self.0.id.cmp(&other.0.id)
    }
}
impl fmt::Debug for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.name)
    }
}
impl fmt::Display for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.name)
    }
}
