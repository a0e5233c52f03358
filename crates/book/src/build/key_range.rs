//! Ranges of position keys: `build` counts one at a time when all the
//! counts do not fit its budget.

use crate::keys::Key;

/// A range of position keys, `start..end` (`build` counts one range at a
/// time when all the counts do not fit its budget). Zobrist keys are
/// uniformly random: equal ranges hold about equal numbers of positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyRange {
    start: u128,
    end: u128,
}

impl KeyRange {
    pub const WHOLE: KeyRange = KeyRange {
        start: 0,
        end: 1 << 64,
    };

    pub fn contains(&self, key: Key) -> bool {
        let k = u128::from(key.0);
        self.start <= k && k < self.end
    }

    /// Part `index` of `count` equal parts of this range.
    pub fn part(&self, index: u64, count: u64) -> KeyRange {
        let width = self.end - self.start;
        let count = u128::from(count.max(1));
        let at = |i: u128| self.start + width * i / count;
        KeyRange {
            start: at(u128::from(index)),
            end: at(u128::from(index) + 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ranges_split_the_keys_without_gap_or_overlap() {
        let whole = KeyRange::WHOLE;
        for k in [0, 1, u64::MAX / 3, u64::MAX / 3 + 1, u64::MAX - 1, u64::MAX] {
            let key = Key(k);
            assert!(whole.contains(key));
            for count in [1, 2, 3, 7] {
                let parts: Vec<KeyRange> = (0..count).map(|i| whole.part(i, count)).collect();
                assert_eq!(parts.iter().filter(|p| p.contains(key)).count(), 1);
                let sub = (0..count)
                    .flat_map(|i| (0..5).map(move |j| whole.part(i, count).part(j, 5)))
                    .filter(|p| p.contains(key))
                    .count();
                assert_eq!(sub, 1, "key {k:#x} in {count} x 5 parts");
            }
        }
    }
}
