//! The *shape* of a SAN move, checked without a position (resolution is the chess core's job).

/// Whether `san` looks like a SAN move of bughouse: a piece move (`Nf3`, `Rdxe1`, `Qh4xe1`), a
/// pawn move (`e4`, `exd6`, `gxh8=N`, `e8Q`), a drop (`N@f3`, `P@g7`, `@e4` for a pawn), or
/// castling (`O-O`, `O-O-O`, also with zeros), optionally followed by `+`, `++` or `#`.
/// `!`/`?` suffixes must already be stripped. This only filters garbage early: a well-shaped
/// token can still be illegal or ambiguous in the position.
pub fn is_san_shaped(san: &str) -> bool {
    let body = san.trim_end_matches(['+', '#']);
    if body.is_empty() || san.len() - body.len() > 2 {
        return false;
    }
    let b = body.as_bytes();
    let is_file = |c: u8| (b'a'..=b'h').contains(&c);
    let is_rank = |c: u8| (b'1'..=b'8').contains(&c);
    let is_square = |s: &[u8]| s.len() == 2 && is_file(s[0]) && is_rank(s[1]);
    let is_piece = |c: u8| b"NBRQK".contains(&c);
    match body {
        "O-O" | "O-O-O" | "0-0" | "0-0-0" => return true,
        _ => {}
    }
    // Drop: optional piece letter (P allowed), `@`, square.
    if let Some(at) = body.find('@') {
        let (piece, square) = (&b[..at], &b[at + 1..]);
        return (piece.is_empty()
            || (piece.len() == 1 && (is_piece(piece[0]) || piece[0] == b'P')))
            && is_square(square);
    }
    if is_piece(b[0]) {
        // Piece move: letter, optional from-file, optional from-rank, optional x, target square.
        let rest = &b[1..];
        if rest.len() < 2 || !is_square(&rest[rest.len() - 2..]) {
            return false;
        }
        let mut from = &rest[..rest.len() - 2];
        if let Some(stripped) = from.strip_suffix(b"x") {
            from = stripped;
        }
        return match from {
            [] => true,
            [c] => is_file(*c) || is_rank(*c),
            [f, r] => is_file(*f) && is_rank(*r),
            _ => false,
        };
    }
    if is_file(b[0]) {
        // Pawn move: [file x] square, then an optional promotion `=X` or `X`.
        let mut rest = b;
        if rest.len() >= 2 && rest[1] == b'x' {
            rest = &rest[2..];
        }
        if rest.len() < 2 || !is_square(&rest[..2]) {
            return false;
        }
        return match &rest[2..] {
            [] => true,
            [b'=', p] | [p] => is_piece(*p) && *p != b'K',
            _ => false,
        };
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_bughouse_san() {
        for san in [
            "e4", "exd6", "gxh8=N+", "d1=Q+", "e8Q", "Nf3", "Nxf6+", "Rdxe1", "R1e2", "Qh4xe1#",
            "N@f3", "P@g7+", "@e4", "Q@c8#", "O-O", "O-O-O+", "0-0", "Kxf2", "Bxc6++",
        ] {
            assert!(is_san_shaped(san), "{san}");
        }
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "", "+", "e9", "i4", "Nf", "Xf3", "N@", "K@@e4", "exd", "e8=K", "e8=", "Nabcf3",
            "O-O-O-O", "e4+++", "1-0", "e2e4", "@e44",
        ] {
            assert!(!is_san_shaped(bad), "{bad}");
        }
    }
}
