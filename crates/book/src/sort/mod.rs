//! Sorting on disk, a utility under every floor that outgrows its memory:
//! an external sort of fixed-size records ([`Sorter`]), records handed out
//! to a file per key range ([`Buckets`]), and the temporary files of a
//! command ([`TempFiles`]). A killed run's files are removed by the next
//! run that makes files of the same name, unless their process still runs.

mod buckets;
mod external;
mod temp_files;

pub use buckets::Buckets;
pub(crate) use external::read_i64;
pub use external::{PairSorter, SortRecord, Sorted, Sorter};
pub use temp_files::TempFiles;
