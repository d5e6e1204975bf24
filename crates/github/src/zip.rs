//! Reads the zip GitHub serves for a workflow artifact. Only what
//! `actions/upload-artifact` writes is needed: stored or deflated entries,
//! found through the central directory. Every size is bounded, so a
//! hostile zip (a bomb, lying sizes) fails instead of filling memory.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZipError {
    #[error("the artifact is not a zip archive: {0}")]
    Malformed(&'static str),
    #[error("entry {0:?} uses a compression other than stored or deflate")]
    Method(String),
    #[error("entry {0:?} inflates past {1} bytes")]
    TooLarge(String, usize),
}

const END_OF_DIRECTORY: u32 = 0x0605_4b50;
const DIRECTORY_ENTRY: u32 = 0x0201_4b50;
const LOCAL_HEADER: u32 = 0x0403_4b50;

fn u16_at(bytes: &[u8], at: usize) -> Result<usize, ZipError> {
    bytes
        .get(at..at + 2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
        .ok_or(ZipError::Malformed("truncated"))
}

fn u32_at(bytes: &[u8], at: usize) -> Result<usize, ZipError> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or(ZipError::Malformed("truncated"))
}

/// Every file in `zip` by its path, each inflated to at most `max_entry`
/// bytes. Folders are left out.
pub fn read(zip: &[u8], max_entry: usize) -> Result<BTreeMap<String, Vec<u8>>, ZipError> {
    // The end-of-directory record sits in the last 22 + 65,535 bytes.
    let floor = zip.len().saturating_sub(22 + 65_535);
    let end = (floor..zip.len().saturating_sub(21))
        .rev()
        .find(|&at| u32_at(zip, at).ok() == Some(END_OF_DIRECTORY as usize))
        .ok_or(ZipError::Malformed("no end of central directory"))?;
    let entries = u16_at(zip, end + 10)?;
    let mut at = u32_at(zip, end + 16)?;
    let mut files = BTreeMap::new();
    for _ in 0..entries {
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
        if size > max_entry {
            return Err(ZipError::TooLarge(name, max_entry));
        }
        if u32_at(zip, local)? != LOCAL_HEADER as usize {
            return Err(ZipError::Malformed("bad local header"));
        }
        let start = local + 30 + u16_at(zip, local + 26)? + u16_at(zip, local + 28)?;
        let data = zip
            .get(start..start + compressed)
            .ok_or(ZipError::Malformed("entry past the end"))?;
        let content = match method {
            0 => data.to_vec(),
            8 => miniz_oxide::inflate::decompress_to_vec_with_limit(data, max_entry)
                .map_err(|_| ZipError::TooLarge(name.clone(), max_entry))?,
            _ => return Err(ZipError::Method(name)),
        };
        files.insert(name, content);
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

    #[test]
    fn what_is_written_reads_back_and_bounds_hold() {
        let patch = b"diff --git a/x b/x\n".repeat(100);
        let zip = write(&[("result.json", b"{}"), ("patch.diff", &patch)]);
        let files = read(&zip, 1 << 20).unwrap();
        assert_eq!(files["result.json"], b"{}");
        assert_eq!(files["patch.diff"], patch);
        assert!(matches!(read(&zip, 100), Err(ZipError::TooLarge(..))));
        assert!(read(b"not a zip", 100).is_err());
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
        let files = read(&std::fs::read(&path).unwrap(), 1 << 20).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            files["result.json"],
            "{\"base\": \"x\"}".repeat(50).as_bytes()
        );
        assert_eq!(files["patch.diff"], b"");
        assert_eq!(files.len(), 2);
    }
}
