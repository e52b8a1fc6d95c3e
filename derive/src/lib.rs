//! `#[derive(EntityRefs)]` for ludus components (see `ludus::durable::EntityRefs`).
//!
//! The derive visits **every** field through `ludus::durable::EntityFields`: an `EntityId`
//! field is visited, a number or an array of numbers is not, an array of `EntityId`s visits each
//! element, and a field of any other type must implement `EntityFields` itself — which a type
//! deriving `EntityRefs` does. A field whose type declares nothing is a compile error, so an
//! entity field cannot be left out, however deeply it is nested.

use proc_macro::TokenStream;
use quote::quote;
use syn::{parse_macro_input, Data, DeriveInput, Fields, Index};

/// Implements `EntityRefs` (and `EntityFields`, so the type can be a field of another) by
/// visiting every field (crate docs).
#[proc_macro_derive(EntityRefs)]
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
    let visits: Vec<proc_macro2::TokenStream> = match fields {
        Fields::Named(named) => named
            .named
            .iter()
            .map(|f| {
                let field = f.ident.as_ref();
                quote! { ::ludus::durable::EntityFields::visit_fields(&mut self.#field, visit); }
            })
            .collect(),
        Fields::Unnamed(unnamed) => (0..unnamed.unnamed.len())
            .map(|i| {
                let field = Index::from(i);
                quote! { ::ludus::durable::EntityFields::visit_fields(&mut self.#field, visit); }
            })
            .collect(),
        Fields::Unit => Vec::new(),
    };
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
