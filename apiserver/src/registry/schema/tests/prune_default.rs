//! Pruning and defaulting.
