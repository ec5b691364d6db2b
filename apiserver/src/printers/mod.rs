//! Server-side printing: the Table columns and rows `kubectl get` shows for each served kind,
//! as upstream's printers define them.
