//! Where a kernel's shared arrays lie in a block's shared memory, for targets that carve
//! them from one array (CUDA past 48 KiB): in order, 16-byte aligned, tiles TMA writes
//! and `wgmma` reads on 1024-byte boundaries, and a shared overlay
//! ([`weft_ir::expr::Buffer::overlay`]) over its hosts where it fits. The emitters lay
//! the arrays out by it, and [`crate::limits::check_limits`] counts by it where the
//! target shares an overlay's bytes.

use std::collections::HashSet;

use weft_ir::expr::Buffer;
use weft_ir::fragment::FragOp;
use weft_ir::kernel::{KStmt, Kernel};

/// The shared buffers (by id) in the swizzled layout: TMA destinations and `wgmma`
/// operands ([`weft_ir::tma`]).
pub fn swizzled_buffers(kernel: &Kernel) -> HashSet<u64> {
    let mut out = HashSet::new();
    kernel.body.visit(&mut |s| {
        if let KStmt::Frag(op) = s
            && matches!(**op, FragOp::Tma { .. } | FragOp::WgMma { .. })
        {
            for (b, _, _) in op.accesses() {
                out.insert(b.id());
            }
        }
    });
    out
}

/// Where each of `kernel.shared` starts in one block of shared memory (16-byte aligned,
/// 1024 for swizzled tiles, in order), and the block's size in bytes. An overlay
/// ([`weft_ir::expr::Buffer::overlay`]) starts where its hosts do when they were laid out
/// one after another before it and their span holds it; else it gets bytes of its own.
pub fn shared_offsets(kernel: &Kernel) -> (Vec<u64>, u64) {
    let mut offsets = Vec::with_capacity(kernel.shared.len());
    let mut end = 0u64;
    // Tiles TMA writes and `wgmma` reads start on 1024-byte boundaries (their swizzle
    // repeats every 1024 bytes of address).
    let swizzled = swizzled_buffers(kernel);
    for b in &kernel.shared {
        let align = if swizzled.contains(&b.id()) {
            weft_ir::tma::SWIZZLE_ALIGN as u64
        } else {
            16
        };
        let bytes = b.bytes().max(0) as u64;
        if let Some(at) = overlay_offset(kernel, &offsets, b, bytes, align) {
            offsets.push(at);
            continue;
        }
        let at = end.div_ceil(align) * align;
        offsets.push(at);
        end = at + bytes;
    }
    (offsets, end)
}

/// The offset of overlay `b` (`bytes` long, `align`-aligned) at the start of its hosts,
/// if they are the arrays laid out just before one another (`offsets` holds those laid
/// out so far, in `kernel.shared`'s order) and their span holds it.
fn overlay_offset(
    kernel: &Kernel,
    offsets: &[u64],
    b: &Buffer,
    bytes: u64,
    align: u64,
) -> Option<u64> {
    let first = kernel
        .shared
        .iter()
        .position(|s| Some(s) == b.hosts().first())?;
    let count = b.hosts().len();
    let span = kernel.shared.get(first..first + count)?;
    // The hosts in order, each with bytes of its own (not itself an overlay).
    let consecutive = span
        .iter()
        .zip(b.hosts())
        .all(|(s, h)| s == h && s.hosts().is_empty());
    let lo = *offsets.get(first)?;
    let last = first + count - 1;
    let hi = offsets.get(last)? + span[count - 1].bytes().max(0) as u64;
    (consecutive && lo % align == 0 && bytes <= hi - lo).then_some(lo)
}

/// The bytes of `kernel`'s shared arrays declared apart (overlays too): what decides
/// between static arrays and one dynamic array ([`Dialect::dynamic_shared`]), since
/// static arrays cannot overlap.
pub fn apart_bytes(kernel: &Kernel) -> u64 {
    kernel.shared.iter().map(|b| b.bytes().max(0) as u64).sum()
}
