//! Table-driven tests of custom-resource schemas: validation messages, defaulting, pruning.

mod prune_default;
mod resources;
mod validate;
