//! Resource usage of this kubelet's nodes: the accounting of what each container uses
//! ([`meter`], from the model's baselines in [`model`]).

pub(crate) mod meter;
pub(crate) mod model;

pub(crate) use meter::{ContainerKey, ContainerMeter, ContainerSpec, NodeMeter};

#[cfg(test)]
mod meter_tests;
