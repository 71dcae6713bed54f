pub mod redirect_policy;
pub mod resolver;
