//! PNG images of plots, encoded here rather than by the plotting library.
//!
//! plotters' `BitMapBackend::new(path, ..)` saves its image by opening `path` itself,
//! following a link planted there (see [`crate::files`]). Plots are drawn into a buffer
//! (`BitMapBackend::with_buffer`) instead, encoded by [`encode`] and written by
//! [`OutDir::write_png`]. The encoder's settings are those plotters used (through the
//! `image` crate: fast compression, adaptive filtering), so the files are unchanged.

use crate::error::{Error, Result};
use crate::files::OutDir;
use std::path::PathBuf;

/// `rgb` (8-bit RGB pixels, row by row) as a PNG image of `width` x `height`.
pub fn encode(width: u32, height: u32, rgb: &[u8]) -> Result<Vec<u8>> {
    let expected = width as u64 * height as u64 * 3;
    if rgb.len() as u64 != expected {
        return Err(Error::runtime(format!(
            "PNG of {width}x{height}: {} bytes of pixels, expected {expected}",
            rgb.len()
        )));
    }
    let mut png = Vec::new();
    let mut encoder = png::Encoder::new(&mut png, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    encoder.set_filter(png::FilterType::Sub);
    encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
    let fail = |e: png::EncodingError| Error::runtime(format!("PNG encoding: {e}"));
    let mut writer = encoder.write_header().map_err(fail)?;
    writer.write_image_data(rgb).map_err(fail)?;
    writer.finish().map_err(fail)?;
    Ok(png)
}

impl OutDir {
    /// Writes the image `rgb` (see [`encode`]) as the PNG file `name`; returns its path.
    pub fn write_png(&self, name: &str, width: u32, height: u32, rgb: &[u8]) -> Result<PathBuf> {
        let png = encode(width, height, rgb)
            .map_err(|e| Error::runtime(format!("{}: {e}", self.join(name).display())))?;
        self.write(name, png)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_encodes_as_a_png_and_a_wrong_size_is_an_error() {
        let rgb: Vec<u8> = (0..4 * 3 * 3).map(|i| i as u8).collect();
        let png = encode(4, 3, &rgb).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert!(png.ends_with(b"IEND\xaeB`\x82"));
        let mut reader = png::Decoder::new(png.as_slice()).read_info().unwrap();
        let mut decoded = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut decoded).unwrap();
        assert_eq!((info.width, info.height), (4, 3));
        assert_eq!(decoded, rgb);
        assert!(encode(4, 4, &rgb).is_err());
    }
}
