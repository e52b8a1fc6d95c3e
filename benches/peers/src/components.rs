//! Component types shared by every contender, so all of them move the same bytes.
//!
//! Each type derives the component traits of every peer (bevy, shipyard) plus
//! `bytemuck::Pod` (what ludus pools require); hecs and sparsey take any `'static + Send + Sync`.

use bytemuck::{Pod, Zeroable};

use crate::math::{Mat4, Vec3};

/// Declares a `#[repr(C)]` plain-data component usable by every contender.
macro_rules! component {
    ($(#[$doc:meta])* $name:ident($ty:ty)) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
        #[derive(bevy_ecs::component::Component, shipyard::Component)]
        pub struct $name(pub $ty);
    };
}

component!(
    /// A 4×4 transform matrix (simple_insert, heavy_compute).
    Transform(Mat4)
);
component!(
    /// A position (simple_insert, simple_iter, heavy_compute, handle_get).
    Position(Vec3)
);
component!(
    /// A rotation (simple_insert, heavy_compute).
    Rotation(Vec3)
);
component!(
    /// A velocity (simple_insert, simple_iter, heavy_compute, handle_get).
    Velocity(Vec3)
);
component!(
    /// The payload every frag_iter entity carries.
    Data(f32)
);
component!(
    /// add_remove / churn: the component every entity starts with.
    CompA(f32)
);
component!(
    /// add_remove: the component added then removed.
    CompB(f32)
);

/// The 26 single-`f32` "fragment" types of frag_iter: entity group `k` carries type `k` + [`Data`].
pub mod frag {
    use super::*;

    /// Calls `$m!(A, B, ..., Z)`, so a contender can expand per-type code for all 26 types.
    #[macro_export]
    macro_rules! for_each_frag_type {
        ($m:ident) => {
            $m!(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z);
        };
    }

    macro_rules! declare {
        ($($t:ident),*) => {
            $(component!(
                /// A frag_iter fragment type.
                $t(f32)
            );)*
        };
    }
    crate::for_each_frag_type!(declare);
}
