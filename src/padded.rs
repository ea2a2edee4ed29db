//! Field and scratch arrays placed at chosen offsets modulo 4 KiB, shared by the grid solvers.

use crate::real::Real;

/// A field array whose start address is placed at a chosen offset modulo 4 KiB.
///
/// With a power-of-two row length every row of every array starts at the same address
/// modulo 4 KiB, so the 16 streams of a fused substep all compete for the same L1 sets
/// (and loads falsely alias earlier stores). Giving each array its own offset spreads
/// them; the slice itself is an ordinary row-major array.
pub struct Padded<T> {
    buf: Vec<T>,
    off: usize,
    len: usize,
    /// Where the data starts, in bytes modulo 4 KiB.
    at: usize,
}

/// [`Padded::zeros`] places slot `s` at `s * 512` bytes modulo 4 KiB.
const ALIAS_PERIOD: usize = 4096;
const SLOT_BYTES: usize = 512;

/// A zeroed vector of `len` elements whose pages the kernel may back with 2 MiB huge pages
/// (Linux transparent huge pages in `madvise` mode): large fields then need 512 times fewer
/// TLB entries, which the strided sweeps (column blocks, row wavefronts) are sensitive to.
pub fn zeroed_huge<T: Real>(len: usize) -> Vec<T> {
    // Zeroed and large: fresh pages from mmap, not yet touched, so the advice applies.
    let v = vec![T::zero(); len];
    advise_huge(v.as_ptr() as usize, std::mem::size_of_val(&v[..]));
    v
}

#[cfg(target_os = "linux")]
fn advise_huge(addr: usize, bytes: usize) {
    const HUGE: usize = 2 << 20;
    const MADV_HUGEPAGE: i32 = 14;
    unsafe extern "C" {
        fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
    }
    let start = addr.next_multiple_of(HUGE);
    let end = (addr + bytes) / HUGE * HUGE;
    if end > start {
        // SAFETY: advice on whole pages inside an allocation this process owns; a refusal
        // (THP off) changes nothing.
        unsafe { madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_addr: usize, _bytes: usize) {}

impl<T: Real> Padded<T> {
    pub fn zeros(len: usize, slot: usize) -> Self {
        Self::zeros_at(len, slot * SLOT_BYTES)
    }

    /// `len` zeros starting `at` bytes modulo 4 KiB (a multiple of the element size).
    pub fn zeros_at(len: usize, at: usize) -> Self {
        let size = std::mem::size_of::<T>();
        let at = at % ALIAS_PERIOD;
        let buf = zeroed_huge(len + ALIAS_PERIOD / size);
        let off = first_at(buf.as_ptr() as usize, at, size);
        Padded { buf, off, len, at }
    }
}

/// The first element at `at` bytes modulo 4 KiB of a buffer at `addr`.
fn first_at(addr: usize, at: usize, size: usize) -> usize {
    ((at + ALIAS_PERIOD - addr % ALIAS_PERIOD) % ALIAS_PERIOD) / size
}

impl<T> std::ops::Deref for Padded<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.buf[self.off..self.off + self.len]
    }
}

impl<T> std::ops::DerefMut for Padded<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.buf[self.off..self.off + self.len]
    }
}

/// A copy at the same offset modulo 4 KiB, in memory advised as [`zeroed_huge`]'s.
impl<T: Clone> Clone for Padded<T> {
    fn clone(&self) -> Self {
        let size = std::mem::size_of::<T>().max(1);
        let mut buf = Vec::with_capacity(self.len + ALIAS_PERIOD / size);
        advise_huge(buf.as_ptr() as usize, buf.capacity() * size);
        // The padding before the data holds copies of its first value (`T` need not have a zero).
        let off = match self.first() {
            Some(first) => {
                let off = first_at(buf.as_ptr() as usize, self.at, size);
                buf.extend(std::iter::repeat_n(first.clone(), off));
                off
            }
            None => 0,
        };
        buf.extend_from_slice(self);
        Padded { buf, off, len: self.len, at: self.at }
    }
}

impl<T: PartialEq> PartialEq for Padded<T> {
    fn eq(&self, other: &Self) -> bool {
        self[..] == other[..]
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Padded<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Padded").field("len", &self.len).field("off", &self.off).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arrays start at their slot's offset modulo 4 KiB, and so do their copies.
    #[test]
    fn arrays_and_copies_start_at_their_slot() {
        for slot in [0, 1, 5, 9] {
            let mut a = Padded::<f32>::zeros(1000, slot);
            a.iter_mut().enumerate().for_each(|(k, x)| *x = k as f32);
            let b = a.clone();
            for p in [&a, &b] {
                assert_eq!(p.as_ptr() as usize % ALIAS_PERIOD, slot * SLOT_BYTES % ALIAS_PERIOD);
            }
            assert!(a == b && b.len() == 1000 && b[999] == 999.0);
        }
        let line = Padded::<f64>::zeros_at(10, 4096 + 3 * 64);
        assert_eq!(line.as_ptr() as usize % ALIAS_PERIOD, 3 * 64);
        let empty = Padded::<f64>::zeros(0, 3);
        assert!(empty.clone().is_empty());
    }
}
