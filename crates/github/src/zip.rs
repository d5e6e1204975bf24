//! Reads the zip GitHub serves for a workflow artifact. Only what
//! `actions/upload-artifact` writes is needed: stored or deflated entries,
//! found through the central directory. The zip is hostile input (a
//! prompt-injected agent chooses what the run uploads), so it is read
//! against one budget: only the entries asked for are inflated, each to at
//! most the size it declares, all of them together to at most
//! [`Limits::max_total`]; a directory with more entries than
//! [`Limits::max_entries`], a name twice, or two entries whose data
//! overlap (a bomb that points many entries at one deflated run) is
//! refused before anything is inflated.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZipError {
    #[error("the artifact is not a zip archive: {0}")]
    Malformed(&'static str),
    #[error("entry {0:?} uses a compression other than stored or deflate")]
    Method(String),
    #[error("entry {0:?} inflates past {1} bytes")]
    TooLarge(String, usize),
    #[error("the artifact's entries inflate past {0} bytes in all")]
    TotalTooLarge(usize),
    #[error("the artifact lists {0} entries, over the {1} longtx reads")]
    TooManyEntries(usize, usize),
    #[error("the artifact holds {0:?} twice")]
    Duplicate(String),
    #[error("the artifact's entries {0:?} and {1:?} share their data")]
    Overlapping(String, String),
}

/// How much of an artifact is read.
#[derive(Debug, Clone, Copy)]
pub struct Limits<'a> {
    /// The only names inflated; every other entry is skipped unread.
    pub wanted: &'a [&'a str],
    /// Bytes one entry may inflate to.
    pub max_entry: usize,
    /// Bytes all wanted entries may inflate to together.
    pub max_total: usize,
    /// Entries the central directory may list (folders included).
    pub max_entries: usize,
}

const END_OF_DIRECTORY: u32 = 0x0605_4b50;
const DIRECTORY_ENTRY: u32 = 0x0201_4b50;
const LOCAL_HEADER: u32 = 0x0403_4b50;

fn u16_at(bytes: &[u8], at: usize) -> Result<usize, ZipError> {
    bytes
        .get(at..at.saturating_add(2))
        .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
        .ok_or(ZipError::Malformed("truncated"))
}

fn u32_at(bytes: &[u8], at: usize) -> Result<usize, ZipError> {
    bytes
        .get(at..at.saturating_add(4))
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or(ZipError::Malformed("truncated"))
}

/// One entry of the central directory, located in the zip.
struct Entry {
    name: String,
    method: usize,
    size: usize,
    /// Where its local header starts and its data ends.
    span: (usize, usize),
    data: (usize, usize),
}

fn directory(zip: &[u8], max_entries: usize) -> Result<Vec<Entry>, ZipError> {
    // The end-of-directory record sits in the last 22 + 65,535 bytes.
    let floor = zip.len().saturating_sub(22 + 65_535);
    let end = (floor..zip.len().saturating_sub(21))
        .rev()
        .find(|&at| u32_at(zip, at).ok() == Some(END_OF_DIRECTORY as usize))
        .ok_or(ZipError::Malformed("no end of central directory"))?;
    let count = u16_at(zip, end + 10)?;
    if count > max_entries {
        return Err(ZipError::TooManyEntries(count, max_entries));
    }
    let mut at = u32_at(zip, end + 16)?;
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        if u32_at(zip, at)? != DIRECTORY_ENTRY as usize {
            return Err(ZipError::Malformed("bad central directory entry"));
        }
        let method = u16_at(zip, at + 10)?;
        let compressed = u32_at(zip, at + 20)?;
        let size = u32_at(zip, at + 24)?;
        let (name_len, extra_len, comment_len) = (
            u16_at(zip, at + 28)?,
            u16_at(zip, at + 30)?,
            u16_at(zip, at + 32)?,
        );
        let local = u32_at(zip, at + 42)?;
        let name = zip
            .get(at + 46..at + 46 + name_len)
            .ok_or(ZipError::Malformed("truncated name"))?;
        let name = String::from_utf8_lossy(name).into_owned();
        at += 46 + name_len + extra_len + comment_len;
        if name.ends_with('/') {
            continue;
        }
        if u32_at(zip, local)? != LOCAL_HEADER as usize {
            return Err(ZipError::Malformed("bad local header"));
        }
        let start = local + 30 + u16_at(zip, local + 26)? + u16_at(zip, local + 28)?;
        let end = start
            .checked_add(compressed)
            .filter(|&end| end <= zip.len())
            .ok_or(ZipError::Malformed("entry past the end"))?;
        entries.push(Entry {
            name,
            method,
            size,
            span: (local, end),
            data: (start, end),
        });
    }
    Ok(entries)
}

/// The entries of `zip` named in `limits.wanted`, by name, read within
/// `limits` (see the module's doc). Folders and other names are skipped.
pub fn read(zip: &[u8], limits: Limits<'_>) -> Result<BTreeMap<String, Vec<u8>>, ZipError> {
    let mut entries = directory(zip, limits.max_entries)?;
    // No two entries may share bytes: each file's data is its own.
    entries.sort_by_key(|e| e.span);
    for pair in entries.windows(2) {
        if pair[1].span.0 < pair[0].span.1 {
            return Err(ZipError::Overlapping(
                pair[0].name.clone(),
                pair[1].name.clone(),
            ));
        }
    }
    let mut files = BTreeMap::new();
    let mut total = 0usize;
    for entry in entries
        .iter()
        .filter(|e| limits.wanted.contains(&e.name.as_str()))
    {
        let name = &entry.name;
        if files.contains_key(name) {
            return Err(ZipError::Duplicate(name.clone()));
        }
        if entry.size > limits.max_entry {
            return Err(ZipError::TooLarge(name.clone(), limits.max_entry));
        }
        total += entry.size;
        if total > limits.max_total {
            return Err(ZipError::TotalTooLarge(limits.max_total));
        }
        let data = &zip[entry.data.0..entry.data.1];
        // Inflated to at most the size the directory declares, which the
        // budget above has already counted: a lying size fails here.
        let content = match entry.method {
            0 => data.to_vec(),
            8 => miniz_oxide::inflate::decompress_to_vec_with_limit(data, entry.size)
                .map_err(|_| ZipError::TooLarge(name.clone(), entry.size))?,
            _ => return Err(ZipError::Method(name.clone())),
        };
        if content.len() != entry.size {
            return Err(ZipError::Malformed("an entry is not the size it declares"));
        }
        files.insert(name.clone(), content);
    }
    Ok(files)
}

/// A zip of `files`, deflated: what the tests' upload-artifact stand-in
/// serves, and the reverse of [`read`].
pub fn write(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut directory = Vec::new();
    for (name, content) in files {
        let deflated = miniz_oxide::deflate::compress_to_vec(content, 6);
        let crc = crc32(content);
        let offset = out.len() as u32;
        let header = |sig: u32, out: &mut Vec<u8>, central: bool| {
            out.extend(sig.to_le_bytes());
            if central {
                out.extend(20u16.to_le_bytes()); // made by
            }
            out.extend(20u16.to_le_bytes()); // needed
            out.extend(0u16.to_le_bytes()); // flags
            out.extend(8u16.to_le_bytes()); // deflate
            out.extend([0u8; 4]); // time, date
            out.extend(crc.to_le_bytes());
            out.extend((deflated.len() as u32).to_le_bytes());
            out.extend((content.len() as u32).to_le_bytes());
            out.extend((name.len() as u16).to_le_bytes());
            out.extend(0u16.to_le_bytes()); // extra
            if central {
                out.extend([0u8; 6]); // comment, disk, internal attributes
                out.extend(0u32.to_le_bytes()); // external attributes
                out.extend(offset.to_le_bytes());
            }
            out.extend(name.as_bytes());
        };
        header(LOCAL_HEADER, &mut out, false);
        out.extend(&deflated);
        header(DIRECTORY_ENTRY, &mut directory, true);
    }
    let start = out.len() as u32;
    out.extend(&directory);
    out.extend(END_OF_DIRECTORY.to_le_bytes());
    out.extend([0u8; 4]);
    out.extend((files.len() as u16).to_le_bytes());
    out.extend((files.len() as u16).to_le_bytes());
    out.extend((directory.len() as u32).to_le_bytes());
    out.extend(start.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_entry: usize) -> Limits<'static> {
        Limits {
            wanted: &["result.json", "patch.diff"],
            max_entry,
            max_total: 2 * max_entry,
            max_entries: 16,
        }
    }

    #[test]
    fn what_is_written_reads_back_and_bounds_hold() {
        let patch = b"diff --git a/x b/x\n".repeat(100);
        let zip = write(&[("result.json", b"{}"), ("patch.diff", &patch)]);
        let files = read(&zip, limits(1 << 20)).unwrap();
        assert_eq!(files["result.json"], b"{}");
        assert_eq!(files["patch.diff"], patch);
        assert!(matches!(
            read(&zip, limits(100)),
            Err(ZipError::TooLarge(..))
        ));
        assert!(read(b"not a zip", limits(100)).is_err());
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    /// A zip made by another tool (Python's zipfile, deflated, as
    /// upload-artifact's zip library writes them) reads too.
    #[test]
    fn a_zip_made_by_python_reads() {
        let dir = std::env::temp_dir().join(format!("longtx-tmp-zip-{}-0", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.zip");
        let made = std::process::Command::new("python3")
            .arg("-c")
            .arg("import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n  z.writestr('result.json', '{\"base\": \"x\"}' * 50)\n  z.writestr('dir/', '')\n  z.writestr('patch.diff', '')\n")
            .arg(&path)
            .status()
            .expect("python3 runs");
        assert!(made.success());
        let files = read(&std::fs::read(&path).unwrap(), limits(1 << 20)).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            files["result.json"],
            "{\"base\": \"x\"}".repeat(50).as_bytes()
        );
        assert_eq!(files["patch.diff"], b"");
        assert_eq!(files.len(), 2);
    }

    /// `zip` (one entry) with its central directory entry listed `times`
    /// times, all pointing at the same local header and data: the shape of
    /// the 78 KB artifact that took longtx to 3 GB.
    pub(crate) fn repeated_directory(zip: &[u8], times: usize) -> Vec<u8> {
        let end = zip.len() - 22;
        let start = u32_at(zip, end + 16).unwrap();
        let entry = zip[start..end].to_vec();
        let mut out = zip[..start].to_vec();
        for _ in 0..times {
            out.extend(&entry);
        }
        out.extend(END_OF_DIRECTORY.to_le_bytes());
        out.extend([0u8; 4]);
        out.extend((times as u16).to_le_bytes());
        out.extend((times as u16).to_le_bytes());
        out.extend(((entry.len() * times) as u32).to_le_bytes());
        out.extend((start as u32).to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out
    }

    #[test]
    fn entries_sharing_one_deflated_run_are_refused_before_inflating() {
        let zip = write(&[("patch.diff", &vec![b'x'; 1 << 20])]);
        let bomb = repeated_directory(&zip, 2000);
        assert!(bomb.len() < 150_000, "{}", bomb.len());
        assert!(matches!(
            read(
                &bomb,
                Limits {
                    max_entries: 5000,
                    ..limits(2 << 20)
                }
            ),
            Err(ZipError::Overlapping(..))
        ));
        assert!(matches!(
            read(&bomb, limits(2 << 20)),
            Err(ZipError::TooManyEntries(2000, 16))
        ));
    }

    #[test]
    fn the_total_is_bounded_and_names_count_once_and_others_are_skipped() {
        let big = vec![b'y'; 1000];
        let zip = write(&[("result.json", &big), ("patch.diff", &big), ("x.bin", &big)]);
        let tight = Limits {
            max_total: 1500,
            ..limits(1000)
        };
        assert!(matches!(
            read(&zip, tight),
            Err(ZipError::TotalTooLarge(1500))
        ));
        let files = read(&zip, limits(1000)).unwrap();
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            ["patch.diff", "result.json"]
        );
        let twice = write(&[("result.json", b"{}"), ("result.json", b"[]")]);
        assert!(matches!(
            read(&twice, limits(100)),
            Err(ZipError::Duplicate(_))
        ));
    }

    #[test]
    fn an_entry_that_inflates_past_its_declared_size_fails() {
        let mut zip = write(&[("patch.diff", &vec![b'z'; 100_000])]);
        // Declare 10 bytes in the central directory (offset 24 of its entry).
        let start = u32_at(&zip, zip.len() - 22 + 16).unwrap();
        zip[start + 24..start + 28].copy_from_slice(&10u32.to_le_bytes());
        assert!(read(&zip, limits(1 << 20)).is_err());
    }
}
