//! Label selectors: the string form (`a=b,c!=d,e in (f,g),!h`) and the `LabelSelector` struct form.
