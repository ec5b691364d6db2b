//! The active queue: pods ready to schedule, highest priority first, then oldest.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

#[derive(Default)]
pub struct Active {
    heap: BinaryHeap<(i32, Reverse<u64>, String)>,
    members: HashSet<String>,
    seq: u64,
}

impl Active {
    pub fn push(&mut self, key: &str, priority: i32) {
        if self.members.insert(key.to_string()) {
            self.seq += 1;
            self.heap
                .push((priority, Reverse(self.seq), key.to_string()));
        }
    }

    pub fn pop(&mut self) -> Option<String> {
        while let Some((_, _, key)) = self.heap.pop() {
            if self.members.remove(&key) {
                return Some(key);
            }
        }
        None
    }

    pub fn remove(&mut self, key: &str) {
        self.members.remove(key);
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn contains(&self, key: &str) -> bool {
        self.members.contains(key)
    }
}
