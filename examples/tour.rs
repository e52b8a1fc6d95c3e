//! The runnable tour of ludus: grows with each capability.
fn main() {
    println!("ludus tour");
}
