use super::*;

#[test]
fn start_perft() {
    let p = Position::new();
    let v = Variant::crazyhouse();
    assert_eq!(perft(&p, 1, &v), 20);
    assert_eq!(perft(&p, 2, &v), 400);
    assert_eq!(perft(&p, 3, &v), 8902);
}
