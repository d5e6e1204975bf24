//! A patch read as text before git sees it. Two things in a patch are
//! dangerous to hand to libgit2 as they are:
//! - a mode git does not know (`100600`): git2 panics on it (`unknown
//!   mode`), which once killed the PR opener for good;
//! - a binary hunk: `literal N` / `delta N` name the inflated size, but
//!   libgit2 inflates the whole hunk before it compares (apply.c), so a
//!   1 MiB hunk that lies inflates to about a gigabyte. libgit2 also
//!   inflates the reverse hunk, to check it undoes the forward one.
//!
//! So every mode line is checked, and every binary hunk is decoded and
//! inflated here with a limit (the size it declares, itself bounded by the
//! policy), before any byte reaches git2: a patch is judged by what it
//! writes, not by its own length.

use super::{PatchPolicy, Refusal, MODE_EXECUTABLE, MODE_FILE, MODE_SUBMODULE, MODE_SYMLINK};

/// Checks every mode line and every binary hunk of `patch`.
pub fn check(policy: &PatchPolicy, patch: &[u8]) -> Result<(), Refusal> {
    let text = String::from_utf8_lossy(patch);
    let mut path = String::new();
    let mut written = 0usize;
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            path = rest
                .rsplit_once(" b/")
                .map(|(_, b)| b.to_owned())
                .unwrap_or_else(|| rest.to_owned());
            continue;
        }
        if let Some(mode) = mode_of(line) {
            known_mode(&path, mode)?;
            continue;
        }
        if line != "GIT binary patch" {
            continue;
        }
        // The forward hunk, then (optionally) the reverse one.
        for side in 0..2 {
            let Some(header) =
                lines.next_if(|l| l.starts_with("literal ") || l.starts_with("delta "))
            else {
                break;
            };
            let mut data = Vec::new();
            while let Some(encoded) = lines.next_if(|l| !l.is_empty()) {
                data.extend(base85_line(encoded).ok_or_else(|| Refusal::BadBinary {
                    path: path.clone(),
                    why: "a line is not git's base85".into(),
                })?);
            }
            lines.next_if(|l| l.is_empty());
            let size = binary_size(policy, &path, header, &data)?;
            if side == 0 {
                written = written.saturating_add(size);
                if written > policy.max_written_bytes {
                    return Err(Refusal::WritesTooMuch {
                        bytes: written,
                        max: policy.max_written_bytes,
                    });
                }
            }
        }
    }
    Ok(())
}

/// The mode a header line sets, if it is one of git's mode lines. A mode
/// that is not octal digits is returned as `u32::MAX`, never accepted.
fn mode_of(line: &str) -> Option<u32> {
    let word = if let Some(rest) = line.strip_prefix("index ") {
        // `index abc..def 100644`: the mode is the third word, when there.
        rest.split_whitespace().nth(1)?
    } else {
        [
            "old mode ",
            "new mode ",
            "deleted file mode ",
            "new file mode ",
        ]
        .iter()
        .find_map(|prefix| line.strip_prefix(prefix))?
        .trim()
    };
    Some(u32::from_str_radix(word, 8).unwrap_or(u32::MAX))
}

fn known_mode(path: &str, mode: u32) -> Result<(), Refusal> {
    match mode {
        MODE_FILE | MODE_EXECUTABLE | MODE_SYMLINK | MODE_SUBMODULE => Ok(()),
        _ => Err(Refusal::UnknownMode {
            path: path.to_owned(),
            mode: if mode == u32::MAX {
                "(not a number)".into()
            } else {
                format!("{mode:o}")
            },
        }),
    }
}

/// The bytes a binary hunk writes: a literal's inflated size, or a delta's
/// target size (from the delta's own header, read after inflating the
/// delta with a limit). Either must fit one file's cap, and the hunk must
/// inflate to exactly the size it declares.
fn binary_size(
    policy: &PatchPolicy,
    path: &str,
    header: &str,
    deflated: &[u8],
) -> Result<usize, Refusal> {
    let (kind, declared) = header.split_once(' ').unwrap_or((header, ""));
    let bad = |why: &str| Refusal::BadBinary {
        path: path.to_owned(),
        why: why.to_owned(),
    };
    let declared: usize = declared
        .trim()
        .parse()
        .map_err(|_| bad("its size is not a number"))?;
    let too_large = |bytes| Refusal::FileTooLarge {
        path: path.to_owned(),
        bytes,
        max: policy.max_file_bytes,
    };
    if declared > policy.max_file_bytes {
        return Err(too_large(declared));
    }
    let inflated = miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(deflated, declared)
        .map_err(|_| bad("it does not inflate to the size it declares"))?;
    if inflated.len() != declared {
        return Err(bad("it does not inflate to the size it declares"));
    }
    if kind == "literal" {
        return Ok(declared);
    }
    // A delta starts with the source's size and the target's size, each a
    // little-endian base-128 number (git's patch-delta.c).
    let mut at = 0;
    let mut varint = || -> Option<usize> {
        let mut value = 0usize;
        for shift in (0..64).step_by(7) {
            let byte = *inflated.get(at)?;
            at += 1;
            value |= ((byte & 0x7f) as usize).checked_shl(shift)?;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    };
    let (_source, target) = (varint(), varint());
    let target = target.ok_or_else(|| bad("its delta has no target size"))?;
    if target > policy.max_file_bytes {
        return Err(too_large(target));
    }
    Ok(target)
}

/// One line of git's base85: a length letter (`A`-`Z` is 1-26 bytes,
/// `a`-`z` 27-52), then five characters for every four bytes.
fn base85_line(line: &str) -> Option<Vec<u8>> {
    const ALPHABET: &[u8; 85] =
        b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";
    let bytes = line.as_bytes();
    let len = match *bytes.first()? {
        c @ b'A'..=b'Z' => (c - b'A' + 1) as usize,
        c @ b'a'..=b'z' => (c - b'a' + 27) as usize,
        _ => return None,
    };
    let encoded = &bytes[1..];
    if encoded.len() != len.div_ceil(4) * 5 {
        return None;
    }
    let mut out = Vec::with_capacity(len + 4);
    for group in encoded.chunks(5) {
        let mut value: u64 = 0;
        for &c in group {
            let digit = ALPHABET.iter().position(|&a| a == c)? as u64;
            value = value * 85 + digit;
        }
        out.extend((u32::try_from(value).ok()?).to_be_bytes());
    }
    out.truncate(len);
    Some(out)
}

/// A binary hunk as `git diff --binary` writes one: `literal <declared>`
/// then `content` deflated, in base85 lines of up to 52 bytes. The reverse
/// of what [`check`] reads, for the tests and the hostile-result suite
/// (which declare sizes that lie).
pub fn literal_hunk(declared: usize, content: &[u8]) -> String {
    const ALPHABET: &[u8; 85] =
        b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";
    let deflated = miniz_oxide::deflate::compress_to_vec_zlib(content, 9);
    let mut out = format!("literal {declared}\n");
    for chunk in deflated.chunks(52) {
        out.push(if chunk.len() <= 26 {
            (b'A' + chunk.len() as u8 - 1) as char
        } else {
            (b'a' + chunk.len() as u8 - 27) as char
        });
        for group in chunk.chunks(4) {
            let mut word = [0u8; 4];
            word[..group.len()].copy_from_slice(group);
            let mut value = u32::from_be_bytes(word);
            let mut digits = [0u8; 5];
            for d in digits.iter_mut().rev() {
                *d = ALPHABET[(value % 85) as usize];
                value /= 85;
            }
            out.extend(digits.iter().map(|&d| d as char));
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literal(declared: usize, content: &[u8]) -> String {
        literal_hunk(declared, content)
    }

    fn policy() -> PatchPolicy {
        PatchPolicy::new(1 << 20, 50, "ignore-list.yaml", &[])
    }

    fn binary_patch(hunk: &str) -> String {
        format!("diff --git a/logo.bin b/logo.bin\nnew file mode 100644\nindex 0000000..1111111\nGIT binary patch\n{hunk}literal 0\nHcmV?d00001\n\n")
    }

    #[test]
    fn an_honest_binary_literal_passes_and_its_bytes_count() {
        let content = vec![7u8; 5000];
        let patch = binary_patch(&literal(5000, &content));
        assert_eq!(check(&policy(), patch.as_bytes()), Ok(()));
    }

    #[test]
    fn a_literal_that_inflates_past_its_declared_size_is_refused_before_git() {
        // Declares 10 bytes, inflates to 8 MiB: libgit2 would inflate it all.
        let patch = binary_patch(&literal(10, &vec![0u8; 8 << 20]));
        assert!(matches!(
            check(&policy(), patch.as_bytes()),
            Err(Refusal::BadBinary { .. })
        ));
    }

    #[test]
    fn a_literal_declaring_a_huge_file_is_refused_by_the_file_cap() {
        let patch = binary_patch(&literal(790 << 20, b"x"));
        assert!(matches!(
            check(&policy(), patch.as_bytes()),
            Err(Refusal::FileTooLarge { .. })
        ));
    }

    #[test]
    fn a_delta_is_judged_by_its_target_size() {
        // Source 10 bytes, target 100 MiB: copy instructions would make it.
        let mut delta = vec![10u8];
        let mut target = 100usize << 20;
        while target >= 0x80 {
            delta.push((target as u8 & 0x7f) | 0x80);
            target >>= 7;
        }
        delta.push(target as u8);
        let hunk = literal(delta.len(), &delta).replacen("literal", "delta", 1);
        let patch = binary_patch(&hunk);
        assert!(matches!(
            check(&policy(), patch.as_bytes()),
            Err(Refusal::FileTooLarge { .. })
        ));
    }

    #[test]
    fn modes_git_does_not_know_are_refused_and_known_ones_pass() {
        let with_mode =
            |mode: &str| format!("diff --git a/bin/x b/bin/x\nold mode 100644\nnew mode {mode}\n");
        for mode in ["100600", "100664", "040000", "7777777", "abc"] {
            assert!(
                matches!(
                    check(&policy(), with_mode(mode).as_bytes()),
                    Err(Refusal::UnknownMode { .. })
                ),
                "{mode}"
            );
        }
        assert_eq!(check(&policy(), with_mode("100755").as_bytes()), Ok(()));
        let index = "diff --git a/a b/a\nindex 1111111..2222222 100640\n--- a/a\n+++ b/a\n";
        assert!(check(&policy(), index.as_bytes()).is_err());
    }
}
