//! What a prompt-injected agent can leave in its run's `longtx-result`
//! artifact: zips shaped as bombs, patches whose headers or binary hunks
//! lie. Each builder makes the bytes the way the attack makes them, so the
//! suite that feeds them to `longtx serve` tests the reader, not a model of
//! it.

/// A zip of one stored entry `name` whose central directory lists it
/// `copies` times, every copy pointing at the same local header and data:
/// the shape of the 78 KB artifact that once took longtx to 3 GB.
pub fn zip_bomb(name: &str, content: &[u8], copies: u16) -> Vec<u8> {
    let zip = longtx_github::zip::write(&[(name, content)]);
    let (start, end) = directory_span(&zip);
    let entry = zip[start..end].to_vec();
    let mut out = zip[..start].to_vec();
    for _ in 0..copies {
        out.extend(&entry);
    }
    end_of_directory(&mut out, copies, entry.len() * copies as usize, start);
    out
}

/// A zip whose `patch.diff` entry points at the same bytes as its
/// `result.json`: two names, one deflated run.
pub fn zip_overlapping(result: &[u8]) -> Vec<u8> {
    let zip = longtx_github::zip::write(&[("result.json", result)]);
    let (start, end) = directory_span(&zip);
    // A copy of the entry renamed; its local header offset (0) stays.
    let mut second = zip[start..end].to_vec();
    second.truncate(46);
    second[28..30].copy_from_slice(&("patch.diff".len() as u16).to_le_bytes());
    second.extend(b"patch.diff");
    let mut out = zip[..end].to_vec();
    out.extend(&second);
    end_of_directory(&mut out, 2, end - start + second.len(), start);
    out
}

fn directory_span(zip: &[u8]) -> (usize, usize) {
    let end = zip.len() - 22;
    let start = u32::from_le_bytes(zip[end + 16..end + 20].try_into().unwrap()) as usize;
    (start, end)
}

fn end_of_directory(out: &mut Vec<u8>, entries: u16, size: usize, start: usize) {
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend([0u8; 4]);
    out.extend(entries.to_le_bytes());
    out.extend(entries.to_le_bytes());
    out.extend((size as u32).to_le_bytes());
    out.extend((start as u32).to_le_bytes());
    out.extend(0u16.to_le_bytes());
}

/// A patch adding the binary file `path` as `git diff --binary` writes a
/// new one (`literal`), but declaring `declared` bytes for `actual`.
pub fn binary_literal_patch(path: &str, declared: usize, actual: &[u8]) -> String {
    format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..1111111111111111111111111111111111111111\nGIT binary patch\n{}literal 0\nHcmV?d00001\n\n",
        longtx_core::patch_policy::preflight::literal_hunk(declared, actual)
    )
}

/// `patch` (one edit of an existing file, as git writes it) with its mode
/// changed to `mode`, which git does not know for a file.
pub fn with_mode(patch: &[u8], mode: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(patch);
    let mut out = String::new();
    for line in text.lines() {
        match line.strip_prefix("index ") {
            Some(rest) => {
                let ids = rest.split_whitespace().next().unwrap_or(rest);
                out.push_str(&format!("old mode 100644\nnew mode {mode}\nindex {ids}\n"));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out.into_bytes()
}

/// The result.json of a fix run from `base`, claiming `cost` (`None`:
/// no cost at all).
pub fn result_json(base: &str, cost: Option<serde_json::Value>) -> Vec<u8> {
    let mut result = serde_json::json!({
        "base": base,
        "summary": "Moved the warehouse call after the commit.",
        "agent": "claude",
        "pattern": "http-call-inside-transaction",
        "turns": 5,
    });
    if let Some(cost) = cost {
        result["cost_usd"] = cost;
    }
    result.to_string().into_bytes()
}
