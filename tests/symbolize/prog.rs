// A small Rust program for test_symbolize: a function in a module, a method and
// a generic function, kept out of line.
mod geometry {
    pub struct Square(pub f64);
    impl Square {
        #[inline(never)]
        pub fn area(&self) -> f64 {
            self.0 * self.0
        }
    }
    #[inline(never)]
    pub fn scaled<T: Into<f64>>(v: T) -> f64 {
        v.into() * 2.5
    }
}

#[inline(never)]
fn compute(n: usize) -> f64 {
    let s = geometry::Square(n as f64);
    s.area() + geometry::scaled(n as u32)
}

fn main() {
    println!("{}", compute(std::env::args().count()));
}
