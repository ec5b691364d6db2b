//! Field selectors (`metadata.name=x,spec.nodeName!=`): parsing and matching.
