//! Validation messages, as upstream renders them.
