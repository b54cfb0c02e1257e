//! Parquet's RLE/bit-packed hybrid run streams as writers lay them out, for the unit tests
//! of the hybrid encoding and the validity benchmark (each includes this file).

/// Appends `v` as an unsigned LEB128 varint (a run header).
pub fn uleb(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// One-bit values as a writer of definition levels encodes them: from each position,
/// the 8 values there repeated as one run while they stay the same, else groups of 8
/// bit-packed until a group of 8 equal values begins (the last group padded).
pub fn write_levels(values: &[bool]) -> Vec<u8> {
    let uniform = |at: usize| {
        let group = &values[at..(at + 8).min(values.len())];
        group.len() == 8 && group.iter().all(|&v| v == group[0])
    };
    let (mut out, mut at) = (Vec::new(), 0);
    while at < values.len() {
        if uniform(at) {
            let v = values[at];
            let n = values[at..].iter().take_while(|&&w| w == v).count();
            uleb(&mut out, (n as u64) << 1);
            out.push(u8::from(v));
            at += n;
            continue;
        }
        let mut end = at;
        while end < values.len() && (end == at || !uniform(end)) {
            end += 8;
        }
        uleb(&mut out, (((end - at) / 8) as u64) << 1 | 1);
        for group in (at..end).step_by(8) {
            let bits = (0..8).filter(|&i| values.get(group + i) == Some(&true));
            out.push(bits.fold(0, |b, i| b | 1 << i));
        }
        at = end;
    }
    out
}
