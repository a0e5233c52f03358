//! Weights from self-play: SPSA over the evaluation's named parameters
//! ([`crate::engine::params::Weights`]), game pairs in parallel over
//! in-process engines, or over the spin options of an external UCI engine
//! ([`external`]), both behind one [`player::Player`]; parameters read from
//! our TOML or the parameter files of OpenBench, fishtest and Weather
//! Factory ([`paramfile`], a module a format), checkpointed after every
//! iteration; or as rounds of a job array ([`shard`]).

pub mod checkpoint;
pub mod external;
pub mod fit;
pub mod net;
pub mod paramfile;
pub mod player;
pub mod report;
pub mod request;
pub mod run;
pub mod settings;
pub mod shard;
pub mod spsa;
