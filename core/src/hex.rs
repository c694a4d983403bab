//! Lower-case hexadecimal for digests and signatures.

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Encodes 32 bytes as 64 lower-case hex digits.
pub(crate) fn encode32(bytes: &[u8; 32]) -> [u8; 64] {
    let mut out = [0u8; 64];
    for (i, b) in bytes.iter().enumerate() {
        out[2 * i] = DIGITS[usize::from(b >> 4)];
        out[2 * i + 1] = DIGITS[usize::from(b & 0x0f)];
    }
    out
}

fn lower_hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

/// Decodes exactly 64 lower-case hex digits into 32 bytes; anything else
/// (another length, upper case, a non-hex byte) is `None`.
pub(crate) fn decode32(text: &[u8]) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in text.chunks_exact(2).enumerate() {
        out[i] = (lower_hex_value(pair[0])? << 4) | lower_hex_value(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_strictness() {
        let bytes: [u8; 32] = std::array::from_fn(|i| (i * 37 + 5) as u8);
        let text = encode32(&bytes);
        assert_eq!(decode32(&text), Some(bytes));
        let upper = text.to_ascii_uppercase();
        assert!(upper != text && decode32(&upper).is_none());
        assert!(decode32(&text[..63]).is_none());
        assert!(decode32(b"zz").is_none());
    }
}
