//! Decoding the text of a java.lang.String from its value array (the manifest's values,
//! the analyzer's strings).

use super::tags::BasicType;

/// `bytes` are the elements of the String's value array of type `ty`. `coder` is JDK 9+'s
/// String.coder (1 = UTF-16 in the JVM's byte order, little-endian on every platform
/// HotSpot and ART run on); without it a byte[] is Latin-1 (ART's compressed strings).
pub fn decode(ty: BasicType, bytes: &[u8], coder: Option<i64>) -> Option<String> {
    match (ty, coder) {
        (BasicType::Char, _) => {
            let units: Vec<u16> = bytes
                .chunks_exact(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]]))
                .collect();
            Some(String::from_utf16_lossy(&units))
        }
        (BasicType::Byte, Some(1)) => {
            let units: Vec<u16> = bytes
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect();
            Some(String::from_utf16_lossy(&units))
        }
        (BasicType::Byte, _) => Some(bytes.iter().map(|&b| b as char).collect()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::hprof::javastring::decode;
    use crate::hprof::BasicType;

    #[test]
    fn decodes_each_representation() {
        assert_eq!(
            decode(BasicType::Byte, b"Xiaomi", Some(0)).unwrap(),
            "Xiaomi"
        );
        assert_eq!(decode(BasicType::Byte, &[0x47, 0xF6], None).unwrap(), "Gö");
        assert_eq!(
            decode(BasicType::Char, &[0, 0x41, 0x65, 0xE5], None).unwrap(),
            "A日"
        );
        assert_eq!(
            decode(BasicType::Byte, &[0x41, 0, 0xE5, 0x65], Some(1)).unwrap(),
            "A日"
        );
        assert!(decode(BasicType::Int, &[0; 4], None).is_none());
    }
}
