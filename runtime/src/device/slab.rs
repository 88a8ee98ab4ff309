//! [`Slab`]: how devices keep their buffers and kernels behind small handles.

use crate::error::DeviceError;

/// A slab of device objects addressed by index; freed slots are reused.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    items: Vec<Option<T>>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab { items: Vec::new() }
    }
}

impl<T> Slab<T> {
    pub(crate) fn insert(&mut self, item: T) -> usize {
        if let Some(i) = self.items.iter().position(Option::is_none) {
            self.items[i] = Some(item);
            i
        } else {
            self.items.push(Some(item));
            self.items.len() - 1
        }
    }
    pub(crate) fn get(&self, i: usize, what: &'static str) -> Result<&T, DeviceError> {
        self.items
            .get(i)
            .and_then(Option::as_ref)
            .ok_or(DeviceError::BadHandle { what, index: i })
    }
    pub(crate) fn get_mut(&mut self, i: usize, what: &'static str) -> Result<&mut T, DeviceError> {
        self.items
            .get_mut(i)
            .and_then(Option::as_mut)
            .ok_or(DeviceError::BadHandle { what, index: i })
    }
    pub(crate) fn remove(&mut self, i: usize, what: &'static str) -> Result<T, DeviceError> {
        self.items
            .get_mut(i)
            .and_then(Option::take)
            .ok_or(DeviceError::BadHandle { what, index: i })
    }
}
