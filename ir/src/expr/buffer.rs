//! Buffers and storage scopes.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::{ComputeOp, Expr, fresh_id};
use crate::dtype::DType;

/// Where a buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Device memory, visible to every thread of every block.
    Global,
    /// On-chip memory shared by the threads of one block (`__shared__`, `var<workgroup>`).
    Shared,
    /// Private to one thread (registers or local memory).
    Local,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Shared => "shared",
            Scope::Local => "local",
        }
    }

    /// Parses `global`, `shared` or `local`.
    pub fn parse(s: &str) -> Option<Scope> {
        Some(match s {
            "global" => Scope::Global,
            "shared" => Scope::Shared,
            "local" => Scope::Local,
            _ => return None,
        })
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A multi-dimensional array with a static shape, row-major.
#[derive(Clone)]
pub struct Buffer(Arc<BufferNode>);

struct BufferNode {
    id: u64,
    name: String,
    dtype: DType,
    shape: Vec<i64>,
    scope: Scope,
    producer: Option<Arc<ComputeOp>>,
    /// The shared arrays whose bytes this one is laid over ([`Buffer::overlay`]).
    hosts: Vec<Buffer>,
}

impl Buffer {
    /// A new buffer. Every extent must be positive (checked where user shapes enter:
    /// [`crate::te`]).
    pub fn new(name: impl Into<String>, shape: Vec<i64>, dtype: DType, scope: Scope) -> Buffer {
        Buffer::node(name.into(), shape, dtype, scope, None, Vec::new())
    }

    /// A buffer with a fresh identity and every field given.
    fn node(
        name: String,
        shape: Vec<i64>,
        dtype: DType,
        scope: Scope,
        producer: Option<Arc<ComputeOp>>,
        hosts: Vec<Buffer>,
    ) -> Buffer {
        Buffer(Arc::new(BufferNode {
            id: fresh_id(),
            name,
            dtype,
            shape,
            scope,
            producer,
            hosts,
        }))
    }

    /// A shared array laid over the bytes of `hosts`: shared arrays of the same kernel,
    /// declared before it and one after another (a pipeline's stages). The kernel uses
    /// one side or the other, never both at once: an epilogue's staging tile over the
    /// stages its main loop is done with, so that the block needs only the larger of the
    /// two. CUDA, which carves shared memory from one array, places it at the first
    /// host's offset where it fits in the hosts' span; HIP, WGSL and MSL declare it
    /// apart.
    /// The interpreter checks the contract: a side read after the other side wrote, a
    /// side touched in the same barrier interval as the other, or the overlay written
    /// while a TMA copy into a host or a `wgmma` reading one is in flight, is an error.
    pub fn overlay(
        name: impl Into<String>,
        shape: Vec<i64>,
        dtype: DType,
        hosts: &[Buffer],
    ) -> Buffer {
        let hosts = hosts.to_vec();
        Buffer::node(name.into(), shape, dtype, Scope::Shared, None, hosts)
    }

    pub(crate) fn with_producer(
        name: impl Into<String>,
        shape: Vec<i64>,
        dtype: DType,
        producer: Arc<ComputeOp>,
    ) -> Buffer {
        let producer = Some(producer);
        Buffer::node(
            name.into(),
            shape,
            dtype,
            Scope::Global,
            producer,
            Vec::new(),
        )
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    pub fn shape(&self) -> &[i64] {
        &self.0.shape
    }
    pub fn scope(&self) -> Scope {
        self.0.scope
    }
    pub fn id(&self) -> u64 {
        self.0.id
    }
    pub fn ndim(&self) -> usize {
        self.0.shape.len()
    }
    /// Number of elements.
    pub fn numel(&self) -> i64 {
        self.0.shape.iter().product()
    }
    /// Size in bytes.
    pub fn bytes(&self) -> i64 {
        self.numel() * self.dtype().bytes() as i64
    }
    /// Row-major strides in elements.
    pub fn strides(&self) -> Vec<i64> {
        let mut s = vec![1; self.ndim()];
        for d in (0..self.ndim().saturating_sub(1)).rev() {
            s[d] = s[d + 1] * self.0.shape[d + 1];
        }
        s
    }
    /// The shared arrays this one is laid over (empty for an ordinary buffer; see
    /// [`Buffer::overlay`]).
    pub fn hosts(&self) -> &[Buffer] {
        &self.0.hosts
    }
    /// The te compute that defines this buffer, if it was made by [`crate::te::compute`].
    pub fn producer(&self) -> Option<&Arc<ComputeOp>> {
        self.0.producer.as_ref()
    }
    /// A new buffer (new identity) with the same type, another name, shape and scope.
    pub fn derive(&self, name: impl Into<String>, shape: Vec<i64>, scope: Scope) -> Buffer {
        Buffer::new(name, shape, self.dtype(), scope)
    }
    /// A load of this buffer at `indices`.
    pub fn load(&self, indices: Vec<Expr>) -> Expr {
        Expr::Load {
            buffer: self.clone(),
            indices,
            lanes: 1,
        }
    }
}

impl PartialEq for Buffer {
    fn eq(&self, other: &Buffer) -> bool {
        self.0.id == other.0.id
    }
}
impl Eq for Buffer {}
impl Hash for Buffer {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.id.hash(h)
    }
}
impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{:?}:{}@{}",
            self.0.name, self.0.shape, self.0.dtype, self.0.scope
        )
    }
}
