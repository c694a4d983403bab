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

/// The value of every byte as a lower-case hex digit; 0xff for any other
/// byte. A table lookup keeps decoding free of data-dependent branches.
const LOWER_HEX_VALUES: [u8; 256] = {
    let mut table = [0xffu8; 256];
    let mut i = 0;
    while i < 16 {
        table[DIGITS[i] as usize] = i as u8;
        i += 1;
    }
    table
};

/// Decodes exactly 64 lower-case hex digits into 32 bytes; anything else
/// (another length, upper case, a non-hex byte) is `None`.
pub(crate) fn decode32(text: &[u8]) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    let mut invalid = 0u8;
    for (i, pair) in text.chunks_exact(2).enumerate() {
        let high = LOWER_HEX_VALUES[usize::from(pair[0])];
        let low = LOWER_HEX_VALUES[usize::from(pair[1])];
        invalid |= high | low;
        out[i] = (high << 4) | (low & 0x0f);
    }
    // Valid digits are below 16; the 0xff marker sets the high bits.
    (invalid < 16).then_some(out)
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
        for bad in [b'g', b'G', b'A', b'/', b':', b'`', 0x80, 0xff, 0] {
            for at in [0, 1, 31, 63] {
                let mut broken = text;
                broken[at] = bad;
                assert!(decode32(&broken).is_none(), "{bad:#x} at {at}");
            }
        }
        let all: Vec<u8> = (0..32u8)
            .flat_map(|i| {
                [
                    DIGITS[usize::from(i % 16)],
                    DIGITS[usize::from(15 - i % 16)],
                ]
            })
            .collect();
        assert_eq!(decode32(&all).unwrap()[1], 0x1e);
    }
}
