//! `#[derive(EntityRefs)]` for ludus components (see `ludus::durable::EntityRefs`).
//!
//! The derive visits **every** field through `ludus::durable::EntityFields`: an `EntityId`
//! field is visited, a number or an array of numbers is not, an array of `EntityId`s visits each
//! element, and a field of any other type must implement `EntityFields` itself — which a type
//! deriving `EntityRefs` does. A field whose type declares nothing is a compile error, so an
//! entity field cannot be left out, however deeply it is nested. A field of a foreign type that
//! holds no entity (a math vector, say) is skipped by saying so: `#[entity_refs(skip)]`.

use proc_macro::TokenStream;
use quote::quote;
use syn::{parse_macro_input, Data, DeriveInput, Field, Index};

/// Implements `EntityRefs` (and `EntityFields`, so the type can be a field of another) by
/// visiting every field (crate docs).
#[proc_macro_derive(EntityRefs, attributes(entity_refs))]
pub fn derive_entity_refs(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let fields = match &input.data {
        Data::Struct(s) => &s.fields,
        _ => {
            return syn::Error::new_spanned(
                &input.ident,
                "EntityRefs can be derived for structs only (a component is a Pod struct)",
            )
            .to_compile_error()
            .into()
        }
    };
    let mut visits = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        match skipped(f) {
            Ok(true) => continue,
            Ok(false) => {}
            Err(e) => return e.to_compile_error().into(),
        }
        let access = match &f.ident {
            Some(name) => quote! { #name },
            None => {
                let index = Index::from(i);
                quote! { #index }
            }
        };
        visits.push(
            quote! { ::ludus::durable::EntityFields::visit_fields(&mut self.#access, visit); },
        );
    }
    quote! {
        impl #impl_generics ::ludus::durable::EntityRefs for #name #ty_generics #where_clause {
            fn visit_entities(
                &mut self,
                visit: &mut dyn ::core::ops::FnMut(&mut ::ludus::world::EntityId),
            ) {
                let _ = &visit;
                #(#visits)*
            }
        }
        impl #impl_generics ::ludus::durable::EntityFields for #name #ty_generics #where_clause {
            fn visit_fields(
                &mut self,
                visit: &mut dyn ::core::ops::FnMut(&mut ::ludus::world::EntityId),
            ) {
                ::ludus::durable::EntityRefs::visit_entities(self, visit);
            }
        }
    }
    .into()
}

/// Whether `f` is marked `#[entity_refs(skip)]` (any other `entity_refs` attribute is an
/// error).
fn skipped(f: &Field) -> syn::Result<bool> {
    let mut skip = false;
    for attr in f.attrs.iter().filter(|a| a.path().is_ident("entity_refs")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("skip") {
                skip = true;
                Ok(())
            } else {
                Err(meta.error("expected `skip`"))
            }
        })?;
    }
    Ok(skip)
}
