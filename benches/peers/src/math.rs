//! The tiny deterministic vector / matrix math every contender shares.
//!
//! All contenders call the same functions on the same inputs, and each entity's result depends
//! only on its own data, so results are bit-identical whatever order an ECS iterates in.

use bytemuck::{Pod, Zeroable};

/// A 3-vector.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Vec3 {
    /// x
    pub x: f32,
    /// y
    pub y: f32,
    /// z
    pub z: f32,
}

impl Vec3 {
    /// `(x, y, z)`.
    pub const fn new(x: f32, y: f32, z: f32) -> Self {
        Self { x, y, z }
    }
}

/// A 4×4 matrix, row-major: `m[row][col]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Mat4 {
    /// Rows.
    pub m: [[f32; 4]; 4],
}

impl Mat4 {
    /// The identity matrix.
    pub const IDENTITY: Mat4 = Mat4 {
        m: [
            [1.0, 0.0, 0.0, 0.0],
            [0.0, 1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0, 0.0],
            [0.0, 0.0, 0.0, 1.0],
        ],
    };

    /// A rotation about x given by its sine `s` and cosine `c`, followed by a translation.
    pub fn rotation_x_translation(s: f32, c: f32, t: Vec3) -> Mat4 {
        Mat4 {
            m: [
                [1.0, 0.0, 0.0, t.x],
                [0.0, c, -s, t.y],
                [0.0, s, c, t.z],
                [0.0, 0.0, 0.0, 1.0],
            ],
        }
    }

    /// `self * other`.
    pub fn mul(&self, other: &Mat4) -> Mat4 {
        let mut out = [[0.0f32; 4]; 4];
        for (r, row) in out.iter_mut().enumerate() {
            for (c, cell) in row.iter_mut().enumerate() {
                *cell = (0..4).map(|k| self.m[r][k] * other.m[k][c]).sum();
            }
        }
        Mat4 { m: out }
    }

    /// `self * (v, 0)`: transforms a direction (no translation).
    #[inline]
    pub fn transform_vector(&self, v: Vec3) -> Vec3 {
        let m = &self.m;
        Vec3 {
            x: m[0][0] * v.x + m[0][1] * v.y + m[0][2] * v.z,
            y: m[1][0] * v.x + m[1][1] * v.y + m[1][2] * v.z,
            z: m[2][0] * v.x + m[2][1] * v.y + m[2][2] * v.z,
        }
    }

    /// The inverse, or `None` when the determinant is zero (or not finite).
    ///
    /// Laplace expansion by complementary minors: the six 2×2 minors of rows 0–1 (`s`) and of
    /// rows 2–3 (`c`) give the determinant and every cofactor.
    #[inline]
    pub fn inverse(&self) -> Option<Mat4> {
        let [[a00, a01, a02, a03], [a10, a11, a12, a13], [a20, a21, a22, a23], [a30, a31, a32, a33]] =
            self.m;
        let s0 = a00 * a11 - a10 * a01;
        let s1 = a00 * a12 - a10 * a02;
        let s2 = a00 * a13 - a10 * a03;
        let s3 = a01 * a12 - a11 * a02;
        let s4 = a01 * a13 - a11 * a03;
        let s5 = a02 * a13 - a12 * a03;
        let c0 = a20 * a31 - a30 * a21;
        let c1 = a20 * a32 - a30 * a22;
        let c2 = a20 * a33 - a30 * a23;
        let c3 = a21 * a32 - a31 * a22;
        let c4 = a21 * a33 - a31 * a23;
        let c5 = a22 * a33 - a32 * a23;
        let det = s0 * c5 - s1 * c4 + s2 * c3 + s3 * c2 - s4 * c1 + s5 * c0;
        if det == 0.0 || !det.is_finite() {
            return None;
        }
        let d = 1.0 / det;
        Some(Mat4 {
            m: [
                [
                    (a11 * c5 - a12 * c4 + a13 * c3) * d,
                    (-a01 * c5 + a02 * c4 - a03 * c3) * d,
                    (a31 * s5 - a32 * s4 + a33 * s3) * d,
                    (-a21 * s5 + a22 * s4 - a23 * s3) * d,
                ],
                [
                    (-a10 * c5 + a12 * c2 - a13 * c1) * d,
                    (a00 * c5 - a02 * c2 + a03 * c1) * d,
                    (-a30 * s5 + a32 * s2 - a33 * s1) * d,
                    (a20 * s5 - a22 * s2 + a23 * s1) * d,
                ],
                [
                    (a10 * c4 - a11 * c2 + a13 * c0) * d,
                    (-a00 * c4 + a01 * c2 - a03 * c0) * d,
                    (a30 * s4 - a31 * s2 + a33 * s0) * d,
                    (-a20 * s4 + a21 * s2 - a23 * s0) * d,
                ],
                [
                    (-a10 * c3 + a11 * c1 - a12 * c0) * d,
                    (a00 * c3 - a01 * c1 + a02 * c0) * d,
                    (-a30 * s3 + a31 * s1 - a32 * s0) * d,
                    (a20 * s3 - a21 * s1 + a22 * s0) * d,
                ],
            ],
        })
    }
}

/// The heavy_compute kernel: invert `mat` [`crate::HEAVY_INVERSIONS`] times (keeping it when
/// singular), then transform `pos` by the result.
///
/// Never inlined: every contender calls the very same machine code, so heavy_compute measures
/// the ECS (iteration, scheduling), not how the optimiser happened to schedule the kernel in
/// each caller.
#[inline(never)]
pub fn heavy_kernel(mat: &mut Mat4, pos: &mut Vec3) {
    for _ in 0..crate::HEAVY_INVERSIONS {
        if let Some(inv) = mat.inverse() {
            *mat = inv;
        }
    }
    *pos = mat.transform_vector(*pos);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{COS_1_2, SIN_1_2};

    fn assert_near_identity(p: &Mat4) {
        for r in 0..4 {
            for c in 0..4 {
                let want = if r == c { 1.0 } else { 0.0 };
                assert!(
                    (p.m[r][c] - want).abs() < 1e-4,
                    "m[{r}][{c}] = {} in {p:?}",
                    p.m[r][c]
                );
            }
        }
    }

    #[test]
    fn inverse_times_matrix_is_identity() {
        let general = Mat4 {
            m: [
                [2.0, 1.0, 0.5, 3.0],
                [0.0, 3.0, 1.0, -1.0],
                [1.0, 0.0, 4.0, 2.0],
                [0.5, 2.0, 0.0, 1.0],
            ],
        };
        for m in [
            general,
            Mat4::rotation_x_translation(SIN_1_2, COS_1_2, Vec3::new(1.0, -2.0, 3.0)),
        ] {
            let inv = m.inverse().expect("invertible");
            assert_near_identity(&m.mul(&inv));
            assert_near_identity(&inv.mul(&m));
        }
    }

    #[test]
    fn rotation_constants_are_sin_and_cos_of_1_2() {
        assert!((1.2f32.sin() - SIN_1_2).abs() < 1e-6);
        assert!((1.2f32.cos() - COS_1_2).abs() < 1e-6);
    }

    #[test]
    fn singular_matrix_has_no_inverse() {
        let mut m = Mat4::IDENTITY;
        m.m[2] = m.m[1];
        assert_eq!(m.inverse(), None);
    }
}
