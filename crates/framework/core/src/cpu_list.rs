//! CPU (and node) lists in the kernel's text form, `0-3,8`: what sysfs, `/proc/PID/status`
//! and `taskset -c` use. One parser and one printer for the CLI, process control and
//! anything else that reads or shows such a list.

/// Parses a list such as `0-3,8` (surrounding white space allowed, empty = no ids);
/// `None` if it is malformed or a range spans more than 65,536 ids.
pub fn parse(s: &str) -> Option<Vec<u32>> {
    let mut ids = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi): (u32, u32) = (lo.trim().parse().ok()?, hi.trim().parse().ok()?);
        if lo > hi || hi - lo > 1 << 16 {
            return None;
        }
        ids.extend(lo..=hi);
    }
    Some(ids)
}

/// Prints ids (in any order, duplicates allowed) as a list such as `0-3,8,10-11`.
pub fn format(ids: &[u32]) -> String {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", ids[i], ids[j])
        } else {
            ids[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_print() {
        assert_eq!(parse("0-3,8\n"), Some(vec![0, 1, 2, 3, 8]));
        assert_eq!(parse(""), Some(vec![]));
        for bad in ["x", "3-1", "1-", "-1", "0-4294967295", "1,,-"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert_eq!(format(&[8, 0, 1, 2, 3, 10, 11, 3]), "0-3,8,10-11");
        assert_eq!(format(&[]), "");
        assert_eq!(parse(&format(&[5, 1, 2])), Some(vec![1, 2, 5]));
    }
}
