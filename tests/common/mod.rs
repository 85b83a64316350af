//! Helpers shared by the integration tests.
pub mod bump;
pub mod mosquitto;
